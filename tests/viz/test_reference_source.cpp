// The study tools' view of the reference core (viz/reference_source.h): its sections as the
// embedded sources have them, the table from engine ops to sections, and the lines `explain
// attention` and `explore` name for each step and node.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>

#include "autograd/ops.h"
#include "nn/attention.h"
#include "viz/attention_walk.h"
#include "viz/explore.h"
#include "viz/reference_source.h"

using namespace ag;
using namespace ag::viz;

namespace {

std::vector<std::string> file_lines(const std::string& relative) {
  std::ifstream in(std::filesystem::path(ATTOGRAD_SOURCE_DIR) / relative);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

}  // namespace

TEST(ReferenceSource, SectionsAreTheSourcesOwnLines) {
  const auto& sections = reference_sections();
  std::set<std::string> names;
  for (const ReferenceSection& s : sections) {
    EXPECT_TRUE(names.insert(s.name).second) << "two sections named " << s.name;
    const auto lines = file_lines(s.file);
    ASSERT_GE(s.first_line, 1) << s.name;
    ASSERT_LE(s.last_line, static_cast<int>(lines.size())) << s.name;
    EXPECT_EQ(lines[s.first_line - 1].rfind("// ---- " + s.name + " ", 0), 0u) << s.name << " starts at its header";
    std::string text;
    for (int i = s.first_line; i <= s.last_line; ++i) text += lines[i - 1] + "\n";
    EXPECT_EQ(s.text, text) << s.name << " at " << s.at();  // the build embedded today's source
  }
  // The walk, the tensor's ops and the model: every forward/backward pair the reference has.
  for (const char* n : {"the walk", "matmul", "add", "scale", "transpose", "reshape", "narrow", "linear", "gelu",
                        "masked_fill", "softmax", "layer_norm", "embedding", "cross_entropy", "attention",
                        "multihead_attention", "GPT"})
    EXPECT_NE(reference_section(n), nullptr) << n;
}

TEST(ReferenceSource, EveryOpInTheTableHasItsSection) {
  for (const OpReference& r : op_references()) EXPECT_NE(reference_section(r.section), nullptr) << r.op << " -> " << r.section;
  EXPECT_EQ(reference_section_for_op("attention_probs")->name, "attention");
  EXPECT_EQ(reference_section_for_op("rope"), nullptr);  // the reference has no rotary embeddings
  EXPECT_THROW(reference_line("softmax", "no such text"), std::logic_error);
}

TEST(ReferenceSource, ExplainNamesTheReferenceLinesOfEachStep) {
  AttentionWalkInput in = AttentionWalkInput::seed();
  in.causal = true;
  const AttentionWalk w = walk_attention_backward(in);
  const std::vector<std::pair<std::string, std::vector<std::string>>> want = {
      {"dL/dcontext", {"the walk"}},       {"dL/dV", {"matmul"}},
      {"dL/dA", {"matmul"}},               {"dL/dS", {"softmax", "masked_fill"}},
      {"dL/dQ", {"scale", "matmul"}},      {"dL/dK", {"scale", "matmul", "transpose"}}};
  ASSERT_EQ(w.steps.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(w.steps[i].quantity, want[i].first);
    ASSERT_EQ(w.steps[i].reference.size(), want[i].second.size()) << want[i].first;
    for (size_t k = 0; k < want[i].second.size(); ++k) {
      const ReferenceLine& l = w.steps[i].reference[k];
      EXPECT_EQ(l.section, want[i].second[k]) << want[i].first;
      const auto lines = file_lines(l.file);
      ASSERT_LE(l.line, static_cast<int>(lines.size()));
      EXPECT_NE(lines[l.line - 1].find(l.text), std::string::npos) << l.at() << " is not " << l.text;
    }
  }
  const std::string text = attention_walk_text(w);
  for (const AttentionWalkStep& s : w.steps)
    for (const ReferenceLine& l : s.reference) EXPECT_NE(text.find(l.at() + "  " + l.text), std::string::npos) << l.at();
  EXPECT_NE(text.find("reference: softmax's backward, then masked_fill's\n     reference/ops.cpp:"), std::string::npos) << text;
  EXPECT_NE(attention_walk_html(w).find("<pre class=\"ref\">"), std::string::npos);
  // Without a mask the scores' gradient passes no masked_fill.
  EXPECT_EQ(walk_attention_backward(AttentionWalkInput::seed()).steps[3].reference.size(), 1u);
}

TEST(ReferenceSource, ExploreNodesOfAnAttentionCallNameTheirSections) {
  nn::MultiheadAttention mha(4, 2, 0.0, true, true, DType::Float64);
  const Tensor x = Tensor::randn({1, 3, 4}, DType::Float64).requires_grad_();
  std::vector<Tensor> leaves = {x};
  for (const Tensor& p : mha.parameters()) leaves.push_back(p);
  for (const bool unfused : {false, true}) {
    const ExploreCapture cap = capture_explore(
        [&] {
          std::optional<nn::UnfusedAttentionGuard> guard;
          if (unfused) guard.emplace();
          return sum(mha.forward(x, x, x, Tensor(), /*need_weights=*/true, Tensor(), true, /*is_causal=*/true).output);
        },
        leaves);
    std::set<std::string> seen;
    for (const ExploreNode& n : cap.nodes)
      if (!n.leaf && n.reference) {
        EXPECT_EQ(n.reference, reference_section_for_op(n.op)) << n.op;
        seen.insert(n.reference->name);
      }
    EXPECT_TRUE(seen.count(unfused ? "softmax" : "attention")) << (unfused ? "unfused" : "fused");
    EXPECT_TRUE(seen.count("linear") || seen.count("matmul"));
  }
}
