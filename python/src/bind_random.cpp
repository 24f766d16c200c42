// Random numbers from Python, as torch's: the Python front draws from torch's CPU generator
// (ag::Generator of kind Torch: autograd/random.h), so that after torch.manual_seed(s) a program
// gets the numbers torch gives it. This file binds the Generator class (torch.Generator), the
// default generator, and the draws (autograd/random_ops.h) that python/attograd/_random.py gives
// torch's signatures. A generator argument of None is the default generator.
#include <random>

#include "autograd/random_ops.h"
#include "common.h"

namespace agpy {

namespace {

using ag::Generator;
using ag::Tensor;

// torch's CPU generator starts from a seed of its own choosing; attograd's Python front starts
// from the same one every run (torch's default_rng_seed_val), so unseeded programs repeat.
constexpr uint64_t kDefaultSeed = 67280421310721ull;

Generator& or_default(Generator* g) { return g ? *g : ag::default_generator(); }

// A seed as torch takes it: any int in [−2^63, 2^64), negative ones wrapped to 64 bits.
uint64_t seed_from_python(nb::handle h) {
  if (!PyLong_Check(h.ptr())) throw nb::type_error("manual_seed expected an int as seed");
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(h.ptr(), &overflow);
  if (overflow == 0) return static_cast<uint64_t>(v);
  if (overflow > 0) {
    const unsigned long long u = PyLong_AsUnsignedLongLong(h.ptr());
    if (!PyErr_Occurred()) return u;
    PyErr_Clear();
  }
  throw nb::value_error("Overflow when unpacking long long");
}

// torch.get_rng_state()'s 5056 bytes, one per element (attograd has no uint8: int64 holds them).
Tensor state_tensor(const Generator& g) {
  const Generator::State words = g.state();
  std::vector<int64_t> bytes(words.size() * 8);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<int64_t>((words[i / 8] >> (8 * (i % 8))) & 0xff);
  return Tensor::from_vector(bytes, {static_cast<int64_t>(bytes.size())});
}

void set_state_from(Generator& g, const Tensor& t) {
  const Tensor b = t.to(ag::DType::Int64).contiguous();
  if (b.dim() != 1 || b.numel() != static_cast<int64_t>(ag::TorchStream::kStateBytes))
    throw std::invalid_argument("Expected a CPUGeneratorImplState of size " + std::to_string(ag::TorchStream::kStateBytes) +
                                " but found the input RNG state size to be " + std::to_string(b.numel()));
  Generator::State words(ag::TorchStream::kStateBytes / 8, 0);
  const int64_t* p = b.data<int64_t>();
  for (size_t i = 0; i < ag::TorchStream::kStateBytes; ++i) {
    if (p[i] < 0 || p[i] > 255) throw std::invalid_argument("RNG state must be a tensor of bytes (values 0 to 255)");
    words[i / 8] |= static_cast<uint64_t>(p[i]) << (8 * (i % 8));
  }
  g.set_state(words);
}

}  // namespace

void bind_random(nb::module_& m) {
  ag::default_generator() = Generator::torch(kDefaultSeed);

  nb::class_<Generator>(m, "Generator")
      .def("__init__", [](Generator* g, nb::handle device) {
        if (!device.is_none() && nb::cast<std::string>(nb::str(device)) != "cpu")
          throw std::runtime_error("attograd runs on the CPU only, not on " + nb::cast<std::string>(nb::repr(device)));
        new (g) Generator(Generator::torch(kDefaultSeed));
      }, nb::arg("device") = "cpu")
      .def("manual_seed", [](nb::handle self, nb::handle seed) {
        nb::cast<Generator&>(self).manual_seed(seed_from_python(seed));
        return nb::borrow(self);
      }, nb::arg("seed"), "Seeds this generator as torch.Generator.manual_seed does; returns it.")
      .def("seed", [](Generator& g) {
        std::random_device rd;
        const uint64_t s = (static_cast<uint64_t>(rd()) << 32) | rd();
        g.manual_seed(s);
        return s;
      }, "Seeds this generator from the system's entropy; returns the seed.")
      .def("initial_seed", &Generator::initial_seed)
      .def_prop_ro("device", [](const Generator&) { return nb::module_::import_("attograd._tensor").attr("device")("cpu"); })
      .def("get_state", &state_tensor, "The state as torch's 5056 bytes (an int64 tensor: attograd has no uint8).")
      .def("set_state", [](nb::handle self, const Tensor& state) {
        set_state_from(nb::cast<Generator&>(self), state);
        return nb::borrow(self);
      }, nb::arg("new_state"));
  m.attr("default_generator") = nb::cast(&ag::default_generator(), nb::rv_policy::reference);

  // The in-place draws: each returns its tensor (the same Python object).
  auto gen_arg = [] { return nb::arg("generator").none(); };
  m.def("_draw_uniform_", [](Tensor t, double from, double to, Generator* g) { return ag::uniform_(t, from, to, or_default(g)); },
        nb::arg("self"), nb::arg("from"), nb::arg("to"), gen_arg());
  m.def("_draw_normal_", [](Tensor t, double mean, double std, Generator* g) { return ag::normal_(t, mean, std, or_default(g)); },
        nb::arg("self"), nb::arg("mean"), nb::arg("std"), gen_arg());
  m.def("_draw_random_", [](Tensor t, std::optional<int64_t> from, std::optional<int64_t> to, Generator* g) {
    return from ? ag::random_(t, *from, to, or_default(g)) : ag::random_(t, or_default(g));
  }, nb::arg("self"), nb::arg("from").none(), nb::arg("to").none(), gen_arg());
  m.def("_draw_bernoulli_", [](Tensor t, const Tensor& p, Generator* g) { return ag::bernoulli_(t, p, or_default(g)); },
        nb::arg("self"), nb::arg("p"), gen_arg());
  m.def("_draw_bernoulli_", [](Tensor t, double p, Generator* g) { return ag::bernoulli_(t, p, or_default(g)); },
        nb::arg("self"), nb::arg("p"), gen_arg());
  m.def("_draw_exponential_", [](Tensor t, double lambd, Generator* g) { return ag::exponential_(t, lambd, or_default(g)); },
        nb::arg("self"), nb::arg("lambd"), gen_arg());
  m.def("_randperm", [](int64_t n, ag::DType dtype, Generator* g) { return ag::randperm(n, or_default(g), dtype); },
        nb::arg("n"), nb::arg("dtype"), gen_arg());
  m.def("_bernoulli", [](const Tensor& p, Generator* g) { return ag::bernoulli(p, or_default(g)); }, nb::arg("input"), gen_arg());
  m.def("_multinomial", [](const Tensor& probs, int64_t n, bool replacement, Generator* g) {
    return ag::multinomial(probs, n, replacement, or_default(g));
  }, nb::arg("input"), nb::arg("num_samples"), nb::arg("replacement"), gen_arg());
}

}  // namespace agpy
