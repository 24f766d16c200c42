#include "autograd/tensor_data.h"

#include <sstream>
#include <stdexcept>

namespace ag {

namespace detail {

namespace {

std::string sizes_str(const Shape& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out;
}
}  // namespace

TensorDataContainer::TensorDataContainer() = default;

TensorDataContainer::TensorDataContainer(bool b) : scalar_(true), value_(b), sizes_{}, type_(DType::Bool), typed_(true) {}

TensorDataContainer::TensorDataContainer(int64_t i, DType type)
    : scalar_(true), value_(static_cast<double>(i)), sizes_{}, type_(type), typed_(true) {}

TensorDataContainer::TensorDataContainer(double d, DType type) : scalar_(true), value_(d), sizes_{}, type_(type), typed_(true) {}

// A floating literal, float or double, is torch's default dtype (float32).
TensorDataContainer::TensorDataContainer(float f) : scalar_(true), value_(f), sizes_{}, type_(DType::Float32), typed_(true) {}
TensorDataContainer::TensorDataContainer(double d) : scalar_(true), value_(d), sizes_{}, type_(DType::Float32), typed_(true) {}

TensorDataContainer::TensorDataContainer(std::initializer_list<TensorDataContainer> list)
    : TensorDataContainer(std::vector<TensorDataContainer>(list)) {}

TensorDataContainer::TensorDataContainer(const std::vector<TensorDataContainer>& list) : elems_(list) {
  sizes_ = {static_cast<int64_t>(list.size())};
  if (list.empty()) return;
  const TensorDataContainer& first = list.front();
  for (const TensorDataContainer& e : list) {
    if (e.sizes_ != first.sizes_)  // torch's message
      throw std::invalid_argument("Expected all sub-lists to have sizes: " + sizes_str(first.sizes_) + " (e.g. " +
                                  first.str() + "), but got sub-list " + e.str() + " with sizes: " + sizes_str(e.sizes_));
    if (!e.typed_) continue;
    if (typed_ && e.type_ != type_)  // torch's message
      throw std::invalid_argument(std::string("Expected all elements of the tensor to have the same scalar type: ") +
                                  scalar_type_name(type_) + ", but got element of scalar type: " + scalar_type_name(e.type_));
    type_ = e.type_;
    typed_ = true;
  }
  sizes_.insert(sizes_.end(), first.sizes_.begin(), first.sizes_.end());
}

void TensorDataContainer::values(std::vector<double>& out) const {
  if (scalar_) {
    out.push_back(value_);
    return;
  }
  for (const TensorDataContainer& e : elems_) e.values(out);
}

std::string TensorDataContainer::str() const {
  if (scalar_) {
    std::ostringstream os;
    if (type_ == DType::Bool) os << (value_ != 0 ? "true" : "false");
    else os << value_;
    return os.str();
  }
  std::string out = "{";
  for (size_t i = 0; i < elems_.size(); ++i) out += (i ? ", " : "") + elems_[i].str();
  return out + "}";
}

}  // namespace detail

Tensor tensor(const detail::TensorDataContainer& data, std::optional<DType> dtype) {
  std::vector<double> v;
  data.values(v);
  const DType t = dtype.value_or(data.scalar_type());
  if (t == DType::Int64 || t == DType::Bool) {  // truncated toward zero, as torch's conversion
    std::vector<double> w;
    for (double x : v) w.push_back(t == DType::Bool ? (x != 0) : static_cast<double>(static_cast<int64_t>(x)));
    v.swap(w);
  }
  return Tensor::from_vector(v, data.sizes(), t);
}

}  // namespace ag
