// What one forward and backward pass did, node by node, for `attograd explore`'s page
// (viz/explore_html.h): each op's forward value, the gradient it received, the gradients it
// sent to its inputs, the order the engine ran the backward functions in, the backward formula
// its source states, the reference core's lines that compute the same op in plain loops
// (viz/reference_source.h), and a finite-difference check of its local backward.
//
// The engine's observers do the watching (autograd/engine.h): ObserveRecordGuard sees each op's
// output and inputs as the forward records it, ObserveNodeBackwardGuard what each backward
// function received and returned, in the order it ran.
//
// The finite-difference check of a node's local backward (the vector-Jacobian product). Every
// leaf x is moved along a random direction, x ± ε·u (u Gaussian, each entry scaled to that
// entry's magnitude, at least 0.01), and
// the forward replayed twice; the k-th op recorded in a replay is the k-th of the pass (the
// forward is deterministic). For each op y = f(x₀, x₁, ...) that received g and sent s₀, s₁, ...:
//     ⟨g, y(+) − y(−)⟩ / 2ε   ≈   Σᵢ ⟨sᵢ, xᵢ(+) − xᵢ(−)⟩ / 2ε
// to O(ε²), because ⟨g, J·Δx⟩ = ⟨Jᵀg, Δx⟩ for whatever change Δx of its inputs the replays
// made. It checks each node alone, with its own forward as it really ran, and catches a dropped
// gradient (an input that moved but got none). One pair of replays checks every node.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "autograd/tensor.h"
#include "viz/backward_formulas.h"
#include "viz/reference_source.h"

namespace ag::viz {

struct ExploreNode {
  bool leaf = false;
  std::string op;            // the op ("softmax"), or the leaf's name ("blocks.0.ln1.weight")
  Shape shape;
  DType dtype = DType::Float32;
  std::string where;         // ops: where record() was called, "autograd/ops/matmul.cpp:115"
  const BackwardFormula* formula = nullptr;  // ops: the backward formula of that record() call
  const ReferenceSection* reference = nullptr;  // ops: the reference core's section that computes this op
  Tensor value;              // the forward value (detached)
  Tensor grad;               // received: an op's output gradient; a leaf's accumulated .grad
  std::vector<int> inputs;   // ops: the node of each input position; -1 for an input without grad
  std::vector<Tensor> sent;  // ops: what the backward returned per input (undefined: nothing)
  int step = -1;             // ops: position in the engine's execution order; -1 if it never ran
  // The finite-difference check (ops that ran): lhs = ⟨g, Δy⟩/2ε, rhs = Σᵢ ⟨sᵢ, Δxᵢ⟩/2ε.
  bool fd_checked = false;
  double fd_lhs = 0, fd_rhs = 0;
  // How far apart rounding the replays' values to their dtype alone can put lhs and rhs: the
  // check's floor (about 1e-16 relative for float64 replays; for float32 replays of a loss
  // that hardly moves, a large part of the difference).
  double fd_noise = 0;
  // max(0, |lhs − rhs| − noise) / (|lhs| + |rhs|), 0 when both are 0; NaN when lhs, rhs or
  // noise is NaN or infinite (a failure: a check never passes on garbage).
  double fd_relative_error() const;
  // Leaves: max |Σ of the gradients the ops sent to it − .grad| (the engine's accumulation).
  double leaf_sum_diff = 0;
};

struct ExploreCapture {
  std::string title;
  DType dtype = DType::Float32;
  double loss = 0;
  std::vector<ExploreNode> nodes;  // 0 is the root; ops in topological order (root first), then leaves
  std::vector<int> order;          // op nodes in the order the engine ran their backward functions
  double fd_step = 0;              // ε
  bool fd_in_float64 = false;      // the replays ran on a float64 twin of a float32 pass
  std::string fd_note;             // why the check could not run, or ""
  // The tolerance a check passes with: 1e-6 for a float64 pass, 1e-3 for a float32 pass whose
  // replays ran on its float64 twin, 2e-2 for float32 replays (ε is then 1e-3), each beyond
  // the rounding floor (fd_noise).
  double fd_tolerance() const;
  int fd_failures() const;         // checked nodes whose relative error exceeds the tolerance (or is NaN)
};

struct ExploreOptions {
  std::string title;
  uint64_t fd_seed = 1;   // of the direction u
  double fd_step = 0;     // ε; 0: 1e-6 in float64 (and with a float64 twin), 1e-3 in float32
  // The float64 twin of a float32 forward: the same function of float64 copies of the leaves
  // (float64_twin_leaves[i] a copy of leaves[i]), recording the same ops. When given, the
  // finite-difference replays run on it, so that the check of the float32 backward is not
  // at the mercy of float32 rounding in the forward (as gradcheck checks in float64): the
  // gradients compared are still the float32 pass's.
  std::function<Tensor()> float64_twin;
  std::vector<Tensor> float64_twin_leaves;
};

// Runs forward() (which must return a one-element loss; all of its leaves that require grad
// must be in `leaves`, which the replays move, and forward() must be deterministic), backward,
// and the finite-difference replays. The leaves' .grad is reset first and holds the pass's
// gradient after; their values are restored exactly.
ExploreCapture capture_explore(const std::function<Tensor()>& forward, const std::vector<Tensor>& leaves,
                               const ExploreOptions& options = {});

}  // namespace ag::viz
