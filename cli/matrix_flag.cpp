#include "cli/matrix_flag.h"

#include <cctype>
#include <limits>
#include <nlohmann/json.hpp>

#include "base/short_quote.h"

namespace ag::cli {

namespace {

// check_attention_walk_input names the matrix first ("K (3, 2) must ..."): name the flag.
std::string flag_of_message(const std::string& message) {
  const std::string first = message.substr(0, message.find(' '));
  if (first == "Q") return "--q";
  if (first == "K") return "--k";
  if (first == "V") return "--v";
  if (first == "G") return "--g";
  return "--mask";
}

}  // namespace

MatrixFlagArgs::MatrixFlagArgs(int argc, char** argv) {
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    const bool matrix_flag = a.size() >= 3 && a.compare(0, 2, "--") == 0 && std::string("qkvg").find(a[2]) != std::string::npos &&
                             (a.size() == 3 || a[3] == '=');
    if (!matrix_flag) {
      storage_.push_back(a);
      continue;
    }
    storage_.push_back(a.substr(1, 2));                      // "-q"
    if (a.size() > 3) storage_.push_back(a.substr(4));       // the value after "="
  }
  for (std::string& s : storage_) ptrs_.push_back(s.data());
  ptrs_.push_back(nullptr);
}

viz::Matrix parse_matrix_flag(const std::string& flag, const std::string& text, bool booleans) {
  const std::string example = booleans ? "[[0,0,1],[0,0,0]]" : "[[1,0],[0,1]]";
  const std::string what = flag + ": expected a matrix of " + (booleans ? "0/1 (1 = hidden)" : "numbers") + " such as " +
                           example + ", got '" + short_quote(text) + "'";
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    throw UsageError(what);
  }
  if (!j.is_array() || j.empty() || !j[0].is_array() || j[0].empty()) throw UsageError(what);
  viz::Matrix m(static_cast<int>(j.size()), static_cast<int>(j[0].size()));
  if (m.rows > kMaxMatrixSide || m.cols > kMaxMatrixSide)
    throw UsageError(flag + ": at most " + std::to_string(kMaxMatrixSide) + " rows and " + std::to_string(kMaxMatrixSide) +
                     " columns (they are printed and drawn entry by entry), got " + std::to_string(m.rows) + "x" + std::to_string(m.cols));
  for (int i = 0; i < m.rows; ++i) {
    if (!j[i].is_array() || static_cast<int>(j[i].size()) != m.cols)
      throw UsageError(flag + ": row " + std::to_string(i) + " has " + (j[i].is_array() ? std::to_string(j[i].size()) : "no") +
                       " entries, row 0 has " + std::to_string(m.cols));
    for (int c = 0; c < m.cols; ++c) {
      const auto& x = j[i][c];
      if (booleans && x.is_boolean()) m(i, c) = x.get<bool>();
      else if (x.is_number() && (!booleans || x == 0 || x == 1)) m(i, c) = x.get<double>();
      else throw UsageError(what);
    }
  }
  return m;
}

viz::AttentionWalkInput attention_input_from_flags(const cxxopts::ParseResult& r, bool* custom, DType dtype) {
  viz::AttentionWalkInput in = viz::AttentionWalkInput::seed();
  *custom = r.count("q") || r.count("k") || r.count("v");
  if (r.count("q")) in.q = parse_matrix_flag("--q", r["q"].as<std::string>());
  if (r.count("k")) in.k = parse_matrix_flag("--k", r["k"].as<std::string>());
  if (r.count("v")) in.v = parse_matrix_flag("--v", r["v"].as<std::string>());
  if (r.count("g")) {
    in.g = parse_matrix_flag("--g", r["g"].as<std::string>());
  } else if (*custom) {  // the identity when the context is square, else ones
    in.g = viz::Matrix(in.q.rows, in.v.cols, in.q.rows == in.v.cols ? 0.0 : 1.0);
    if (in.q.rows == in.v.cols)
      for (int i = 0; i < in.q.rows; ++i) in.g(i, i) = 1;
  }
  if (r.count("mask")) {
    const viz::Matrix m = parse_matrix_flag("--mask", r["mask"].as<std::string>(), /*booleans=*/true);
    if (m.rows != in.q.rows || m.cols != in.k.rows)
      throw UsageError("--mask must be (" + std::to_string(in.q.rows) + ", " + std::to_string(in.k.rows) +
                       "): one row per query, one column per key; got (" + std::to_string(m.rows) + ", " +
                       std::to_string(m.cols) + ")");
    for (double x : m.v) in.mask.push_back(x != 0);
  }
  in.causal = r.count("causal") > 0;
  try {
    viz::check_attention_walk_input(in);
  } catch (const std::invalid_argument& e) {
    throw UsageError(flag_of_message(e.what()) + ": " + e.what());
  }
  const bool f32 = dtype == DType::Float32;
  const double largest = f32 ? std::numeric_limits<float>::max() : std::numeric_limits<double>::max();
  if (const auto p = viz::attention_walk_range_problem(in, largest)) {
    std::string flags;
    for (const std::string& m : p->matrices) {
      std::string f = "--" + m;
      f[2] = static_cast<char>(std::tolower(static_cast<unsigned char>(f[2])));
      flags += (flags.empty() ? "" : ", ") + f;
    }
    const std::string type = f32 ? "float32" : "float64";
    const bool input = p->matrices.size() == 1 && p->quantity == p->matrices[0];
    throw UsageError(flags + ": " + (input ? "a value, " + p->value + "," : p->quantity + " reaches " + p->value + ",") +
                     " is beyond " + type + "'s range (largest " + (f32 ? "3.4e+38" : "1.8e+308") + "); give smaller values" +
                     (f32 ? ", or --dtype float64" : ""));
  }
  return in;
}

}  // namespace ag::cli
