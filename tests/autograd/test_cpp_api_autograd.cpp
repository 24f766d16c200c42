// The C++ snippets of the C++ API guide's autograd part (docs/cpp_api.md), compiled
// and run here; the text between each "--8<-- [start:NAME]" and "--8<-- [end:NAME]" marker pair
// is shown verbatim in the guide, and CppApiAutogradDoc.* checks that it is (both ways).
#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>

#include "autograd/engine.h"
#include "autograd/function.h"
#include "autograd/functional.h"
#include "autograd/ops.h"

using namespace ag;

namespace {
std::vector<double> values(const Tensor& t) { return t.to_double_vector(); }
}  // namespace

// --8<-- [start:function]
struct MyExp : ag::autograd::Function<MyExp> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x) {
    Tensor y = exp(x);  // runs with grad mode off: MyExp is one node
    ctx->save_for_backward({y});
    return y;
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> grad_outputs) {
    Tensor y = ctx->get_saved_variables()[0];
    return {grad_outputs[0] * y};  // written with ops: differentiable again
  }
};

// Two tensor inputs and a double; the double gets no gradient.
struct ScaledProduct : ag::autograd::Function<ScaledProduct> {
  static Tensor forward(AutogradContext* ctx, const Tensor& a, const Tensor& b, double scale) {
    ctx->save_for_backward({a, b});
    ctx->saved_data["scale"] = scale;
    return a * b * scale;
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> g) {
    auto saved = ctx->get_saved_variables();
    double scale = ctx->saved_data["scale"].toDouble();
    return {g[0] * saved[1] * scale, g[0] * saved[0] * scale, Tensor()};
  }
};
// --8<-- [end:function]

// --8<-- [start:product]
struct Product : ag::autograd::Function<Product> {
  static Tensor forward(AutogradContext* ctx, const Tensor& a, const Tensor& b) {
    ctx->save_for_backward({a, b});
    return a * b;
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> g) {
    auto saved = ctx->get_saved_variables();
    Tensor ga, gb;  // only the gradients this backward or grad call uses
    if (ctx->needs_input_grad(0)) ga = g[0] * saved[1];
    if (ctx->needs_input_grad(1)) gb = g[0] * saved[0];
    return {ga, gb};
  }
};
// --8<-- [end:product]

TEST(CppApiAutograd, BackwardAndGrad) {
  // --8<-- [start:backward]
  Tensor x = Tensor::from_vector(std::vector<double>{1, 2}, {2}, DType::Float64).requires_grad_();
  Tensor w = Tensor::from_vector(std::vector<double>{3, -1}, {2}, DType::Float64).requires_grad_();
  Tensor loss = sum(pow(x * w, 2.0));
  loss.backward({}, {.retain_graph = true});
  Tensor held = x.grad();                 // [18, 4]
  loss.backward({}, {.inputs = {x}});     // into x.grad only, in place
  // held == x.grad() == [36, 8]; w.grad() == [6, -8]
  // --8<-- [end:backward]
  EXPECT_TRUE(held.same(x.grad()));
  EXPECT_EQ(values(held), (std::vector<double>{36, 8}));
  EXPECT_EQ(values(w.grad()), (std::vector<double>{6, -8}));
}

TEST(CppApiAutograd, BackwardInputsExplicitlyEmpty) {
  // --8<-- [start:inputs_empty]
  Tensor v = Tensor::from_vector(std::vector<double>{1, 2}, {2}, DType::Float64).requires_grad_();
  std::string refused;
  try {
    sum(v * v).backward({}, {.inputs = std::vector<Tensor>{}});
  } catch (const std::invalid_argument& e) {
    refused = e.what();  // `inputs` argument to `backward()` cannot be empty.
  }
  // --8<-- [end:inputs_empty]
  EXPECT_EQ(refused, "`inputs` argument to `backward()` cannot be empty.");
  EXPECT_FALSE(v.grad().defined());
  sum(v * v).backward({}, {.inputs = {}});  // {} is "not given": every leaf
  EXPECT_EQ(values(v.grad()), (std::vector<double>{2, 4}));
}

TEST(CppApiAutograd, HigherOrder) {
  // --8<-- [start:grad]
  Tensor t = Tensor::scalar(0.5, DType::Float64).requires_grad_();
  Tensor y = pow(t, 4.0);
  Tensor d1 = grad({y}, {t}, {}, {.create_graph = true})[0];   // 4t³ = 0.5
  Tensor d2 = grad({d1}, {t}, {}, {.create_graph = true})[0];  // 12t² = 3
  Tensor d3 = grad({d2}, {t})[0];                              // 24t = 12
  Tensor z = Tensor::scalar(1.0, DType::Float64).requires_grad_();
  std::vector<Tensor> gs = grad({y}, {t, z}, {}, {.materialize_grads = true});  // {0.5, 0}
  // --8<-- [end:grad]
  EXPECT_EQ(d1.item(), 0.5);
  EXPECT_EQ(d2.item(), 3.0);
  EXPECT_EQ(d3.item(), 12.0);
  EXPECT_EQ(gs[0].item(), 0.5);
  EXPECT_EQ(gs[1].item(), 0.0);
}

TEST(CppApiAutograd, Hooks) {
  // --8<-- [start:hooks]
  Tensor a = Tensor::from_vector(std::vector<double>{1, 2}, {2}, DType::Float64).requires_grad_();
  Tensor h = a * 3.0;
  h.retain_grad();
  HookHandle clip = h.register_hook([](const Tensor& g) { return clamp(g, -1.0, 1.0); });
  Tensor seen;
  a.register_post_accumulate_grad_hook([&](const Tensor& p) { seen = p.grad().clone(); });
  sum(h * h).backward();  // h.grad() == clamp(2h) == [1, 1]; a.grad() == seen == [3, 3]
  clip.remove();
  {
    NoGradGuard no_grad;  // torch.no_grad(): nothing is recorded
    Tensor b = a * 2.0;   // b.requires_grad() == false
  }
  // --8<-- [end:hooks]
  EXPECT_EQ(values(h.grad()), (std::vector<double>{1, 1}));
  EXPECT_EQ(values(a.grad()), (std::vector<double>{3, 3}));
  EXPECT_EQ(values(seen), (std::vector<double>{3, 3}));
}

TEST(CppApiAutograd, VoidHook) {
  // --8<-- [start:void_hook]
  Tensor c = Tensor::from_vector(std::vector<double>{1, 2}, {2}, DType::Float64).requires_grad_();
  Tensor c3 = c * 3.0;
  std::vector<double> observed;
  c3.register_hook([&](const Tensor& g) { observed = g.to_double_vector(); });  // returns nothing
  sum(c3 * c3).backward();  // observed == 2·c3 == [6, 12]; c.grad() == [18, 36]
  // --8<-- [end:void_hook]
  EXPECT_EQ(observed, (std::vector<double>{6, 12}));
  EXPECT_EQ(values(c.grad()), (std::vector<double>{18, 36}));
}

TEST(CppApiAutograd, Anomaly) {
  // --8<-- [start:anomaly]
  std::string message;
  Tensor u = Tensor::from_vector(std::vector<double>{0, 1}, {2}, DType::Float64).requires_grad_();
  DetectAnomalyGuard anomaly;  // torch.autograd.detect_anomaly()
  Tensor r = sqrt(u);          // d√u/du at 0 is inf
  try {
    sum(r).backward();
  } catch (const std::runtime_error& e) {
    message = e.what();  // names 'sqrt' and this file and line
  }
  // --8<-- [end:anomaly]
  EXPECT_NE(message.find("'sqrt' (output float64[2]) returned inf"), std::string::npos) << message;
  EXPECT_NE(message.find("tests/autograd/test_cpp_api_autograd.cpp:"), std::string::npos) << message;
}

TEST(CppApiAutograd, Autocast) {
  // --8<-- [start:autocast]
  Tensor x = Tensor::from_vector(std::vector<float>{1.0f + 0x1p-9f, 2.0f}, {1, 2});  // 1 + 2⁻⁹ is not a bf16
  Tensor w = Tensor::from_vector(std::vector<float>{1.0f, 1.0f}, {2, 1}).requires_grad_();
  Tensor y;
  {
    AutocastGuard bf16(Precision::BF16);  // torch.autocast("cpu", dtype=torch.bfloat16)
    y = matmul(x, w);                     // (1 + 2⁻⁹ rounds to 1) · 1 + 2 · 1 = 3
  }
  sum(y).backward();  // w.grad() == round(x)ᵀ = [1, 2]: the backward ran at the forward's precision
  // --8<-- [end:autocast]
  EXPECT_EQ(y.item(), 3.0);
  EXPECT_EQ(w.grad().data<float>()[0], 1.0f);
  EXPECT_EQ(w.grad().data<float>()[1], 2.0f);
}

TEST(CppApiAutograd, Functional) {
  // --8<-- [start:functional]
  namespace F = ag::autograd::functional;
  auto cube_sum = [](const Tensor& x) { return sum(pow(x, 3.0)); };
  auto square = [](const Tensor& x) { return x * x; };
  Tensor x0 = Tensor::from_vector(std::vector<double>{1, 2}, {2}, DType::Float64);
  Tensor v = Tensor::from_vector(std::vector<double>{1, -1}, {2}, DType::Float64);
  Tensor J = F::jacobian(square, x0);        // [[2, 0], [0, 4]]
  Tensor H = F::hessian(cube_sum, x0);       // [[6, 0], [0, 12]]
  auto [y, hv] = F::hvp(cube_sum, x0, v);    // y == 9, hv == [6, -12]
  auto [sq, vj] = F::vjp(square, x0, v);     // vj == [2, -4]
  auto [sq2, jv] = F::jvp(square, x0, v);    // jv == [2, -4]
  // Several inputs: a callable on a vector, one result per input.
  Tensor x1 = Tensor::from_vector(std::vector<double>{3, 4}, {2}, DType::Float64);
  auto dot = [](const std::vector<Tensor>& in) { return sum(in[0] * in[1]); };
  std::vector<Tensor> grads = F::vjp(dot, {x0, x1}).second;  // {[3, 4], [1, 2]}
  Tensor H2 = F::hessian(cube_sum, x0, {.create_graph = true, .strict = true});
  // --8<-- [end:functional]
  EXPECT_EQ(values(J), (std::vector<double>{2, 0, 0, 4}));
  EXPECT_EQ(values(H), (std::vector<double>{6, 0, 0, 12}));
  EXPECT_EQ(y.item(), 9.0);
  EXPECT_EQ(values(hv), (std::vector<double>{6, -12}));
  EXPECT_EQ(values(sq), (std::vector<double>{1, 4}));
  EXPECT_EQ(values(vj), (std::vector<double>{2, -4}));
  EXPECT_EQ(values(sq2), (std::vector<double>{1, 4}));
  EXPECT_EQ(values(jv), (std::vector<double>{2, -4}));
  EXPECT_EQ(values(grads[0]), (std::vector<double>{3, 4}));
  EXPECT_EQ(values(grads[1]), (std::vector<double>{1, 2}));
  EXPECT_EQ(values(H2), values(H));
}

TEST(CppApiAutograd, CustomFunction) {
  // --8<-- [start:apply]
  Tensor q = Tensor::from_vector(std::vector<double>{0, 1}, {2}, DType::Float64).requires_grad_();
  Tensor e = MyExp::apply(q);
  Tensor g = grad({sum(e)}, {q}, {}, {.create_graph = true})[0];  // exp(q) = [1, 2.718...]
  Tensor g2 = grad({sum(g)}, {q})[0];                             // double backward: exp(q)
  Tensor p = ScaledProduct::apply(q, MyExp::apply(q), 0.5);  // g2 freed e's graph: a new exp
  sum(p).backward();  // q.grad() == 0.5 · (e + q ⊙ e) == [0.5, 2.718...]
  // --8<-- [end:apply]
  EXPECT_EQ(values(g), values(e));
  EXPECT_EQ(values(g2), values(e));
  const std::vector<double> ev = values(e);
  // q.grad = 0.5·e (from a) + 0.5·q·e (from b through e = exp(q))
  EXPECT_NEAR(q.grad().at({0}), 0.5 * ev[0] + 0.5 * 0 * ev[0], 1e-15);
  EXPECT_NEAR(q.grad().at({1}), 0.5 * ev[1] + 0.5 * 1 * ev[1], 1e-15);
}

TEST(CppApiAutograd, NeedsInputGrad) {
  // --8<-- [start:needs]
  Tensor m = Tensor::from_vector(std::vector<double>{1, 2}, {2}, DType::Float64).requires_grad_();
  Tensor n = Tensor::from_vector(std::vector<double>{3, 4}, {2}, DType::Float64).requires_grad_();
  Tensor dm = grad({sum(Product::apply(m, n))}, {m})[0];  // == n; gb was not computed
  // --8<-- [end:needs]
  EXPECT_EQ(values(dm), (std::vector<double>{3, 4}));
  Tensor dn = grad({sum(Product::apply(m, n))}, {n})[0];
  EXPECT_EQ(values(dn), (std::vector<double>{1, 2}));
}

// ---- the guide shows exactly these snippets ------------------------------------------------------

namespace {

std::string read(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The snippets of this file, each without the indentation its lines share.
std::map<std::string, std::string> snippets() {
  const std::string src = read(std::string(ATTOGRAD_SOURCE_DIR) + "/tests/autograd/test_cpp_api_autograd.cpp");
  std::map<std::string, std::string> out;
  const std::regex start(R"(// --8<-- \[start:(\w+)\]\n)");
  for (std::sregex_iterator it(src.begin(), src.end(), start), end; it != end; ++it) {
    const std::string name = (*it)[1];
    const size_t begin = static_cast<size_t>(it->position() + it->length());
    const size_t stop = src.find("// --8<-- [end:" + name + "]", begin);
    EXPECT_NE(stop, std::string::npos) << "no end marker for " << name;
    std::string body = src.substr(begin, src.rfind('\n', stop) + 1 - begin);
    size_t indent = std::string::npos;
    std::istringstream lines(body);
    for (std::string line; std::getline(lines, line);)
      if (!line.empty()) indent = std::min(indent, line.find_first_not_of(' '));
    std::string dedented;
    lines = std::istringstream(body);
    for (std::string line; std::getline(lines, line);) dedented += (line.empty() ? line : line.substr(indent)) + "\n";
    out[name] = dedented;
  }
  return out;
}

// The ```cpp blocks of the guide's autograd part.
std::vector<std::string> cpp_blocks_of_the_guide() {
  std::string doc;
  for (const char* name : {"/docs/cpp_api.md"}) {
    std::ifstream in(std::string(ATTOGRAD_SOURCE_DIR) + name);
    if (!in.good()) continue;
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    const size_t begin = text.find("<!-- begin cpp_api_autograd -->"), end = text.find("<!-- end cpp_api_autograd -->");
    if (begin != std::string::npos && end != std::string::npos) doc += text.substr(begin, end - begin);
  }
  EXPECT_FALSE(doc.empty()) << "no '<!-- begin cpp_api_autograd -->' section in docs/cpp_api.md";
  std::vector<std::string> blocks;
  for (size_t at = doc.find("```cpp\n"); at != std::string::npos; at = doc.find("```cpp\n", at)) {
    const size_t body = at + 7, close = doc.find("```\n", body);
    blocks.push_back(doc.substr(body, close - body));
    at = close;
  }
  return blocks;
}

}  // namespace

TEST(CppApiAutogradDoc, EverySnippetIsInTheGuideAndEveryBlockIsMadeOfSnippets) {
  // A block of the guide may join several snippets (a custom Function's struct and its use: the
  // guide's blocks are compiled as separate functions by tests/doc_snippets.cmake).
  const auto snips = snippets();
  ASSERT_GE(snips.size(), 6u);
  const std::vector<std::string> blocks = cpp_blocks_of_the_guide();
  for (const auto& [name, text] : snips) {
    bool found = false;
    for (const std::string& block : blocks) found |= block.find(text) != std::string::npos;
    EXPECT_TRUE(found) << "snippet '" << name << "' of tests/autograd/test_cpp_api_autograd.cpp is not in a ```cpp block of the guide:\n"
                       << text;
  }
  for (std::string block : blocks) {
    for (const auto& [name, text] : snips)
      if (const size_t at = block.find(text); at != std::string::npos) block.erase(at, text.size());
    EXPECT_EQ(block.find_first_not_of(" \n"), std::string::npos)
        << "a ```cpp block of the guide has code that tests/autograd/test_cpp_api_autograd.cpp does not run:\n" << block;
  }
}
