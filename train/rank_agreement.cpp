#include "train/rank_agreement.h"

#include <string>
#include <utility>
#include <vector>

#include "train/config/config_error.h"

namespace ag::train {

namespace {
// "flag" → value (as config files show it) of every field the ranks must agree on, in the
// table's order.
std::vector<std::pair<std::string, std::string>> compared_fields(const TrainConfig& cfg) {
  std::vector<std::pair<std::string, std::string>> out;
  visit_fields(cfg, [&](const auto& v, const FieldInfo& f) {
    const std::string flag = f.flag;
    if (f.on_resume == OnResume::Fresh || flag == "data" || flag == "out" || flag == "init-from") return;
    out.emplace_back(flag, format_value(v));
  });
  return out;
}

std::string serialize(const std::vector<std::pair<std::string, std::string>>& fields) {
  std::string s;
  for (const auto& [flag, value] : fields) s += flag + "=" + value + '\n';
  return s;
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}
}  // namespace

void check_ranks_agree(distributed::Comm& comm, const TrainConfig& cfg) {
  if (!comm.distributed()) return;
  const auto mine = compared_fields(cfg);
  std::string text = serialize(mine);
  // The hash first: one broadcast and one allreduce when all agree, as they should.
  const uint64_t h = fnv1a(text);
  uint64_t root_h = h;
  comm.broadcast(&root_h, sizeof root_h);
  double differ = root_h == h ? 0.0 : 1.0;
  comm.allreduce_sum(&differ, 1);
  if (differ == 0) return;

  // Some rank differs: which fields, on how many ranks. Rank 0's fields, line by line, in the
  // same order on every rank (the table is the same program).
  std::string root_text = text;
  comm.broadcast(root_text);
  std::vector<std::string> root_values;
  for (size_t at = 0; at < root_text.size();) {
    const size_t nl = root_text.find('\n', at);
    const std::string line = root_text.substr(at, nl - at);
    root_values.push_back(line.substr(line.find('=') + 1));
    at = nl == std::string::npos ? root_text.size() : nl + 1;
  }
  std::vector<double> counts(mine.size(), 0.0);
  for (size_t i = 0; i < mine.size(); ++i)
    counts[i] = i < root_values.size() && root_values[i] == mine[i].second ? 0.0 : 1.0;
  comm.allreduce_sum(counts.data(), static_cast<int>(counts.size()));

  std::string list;
  for (size_t i = 0; i < mine.size(); ++i) {
    if (counts[i] == 0) continue;
    const std::string root_value = i < root_values.size() ? root_values[i] : "?";
    list += (list.empty() ? "--" : ", --") + mine[i].first + " (rank 0: " + root_value;
    if (root_value != mine[i].second) list += ", " + comm.describe(comm.rank()) + ": " + mine[i].second;
    list += "; " + std::to_string(static_cast<long>(counts[i])) + " of " + std::to_string(comm.size()) + " ranks differ)";
  }
  throw ConfigError("the ranks of this job were started with different configurations: " + list +
                    ". Give every rank the same flags and --config (only --data, --out, --init-from and how each "
                    "process runs, such as --threads, may differ)");
}

}  // namespace ag::train
