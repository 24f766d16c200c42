// A file of the nn layer that includes the application (train/): the layer check must refuse it.
#pragma once
#include "autograd/tensor.h"
#include "train/run.h"
