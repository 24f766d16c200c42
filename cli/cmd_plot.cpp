// `attograd plot DIR [DIR...] [--out FILE.png]`: draws DIR/metrics.jsonl (written by attograd train) as
// loss curves against the step, with the learning rate below (viz/loss_plot.h).
#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "viz/loss_plot.h"

namespace ag::cli {

namespace fs = std::filesystem;

int cmd_plot(int argc, char** argv) {
  cxxopts::Options options("attograd plot", "Plot the train and val loss and the learning rate of a run against the step.");
  // clang-format off
  options.add_options()
    ("dir", "run folders holding metrics.jsonl (or the metrics files); several are overlaid, named by their folders",
     cxxopts::value<std::vector<std::string>>())
    ("out", "PNG file to write (default: DIR/loss.png; for several runs loss_compare.png)", cxxopts::value<std::string>())
    ("title", "title above the plot (default: the run folder)", cxxopts::value<std::string>())
    ("width", "image width in pixels", cxxopts::value<int>()->default_value("900"))
    ("height", "image height in pixels", cxxopts::value<int>()->default_value("600"))
    ("h,help", "show this help");
  // clang-format on
  options.parse_positional({"dir"});
  options.positional_help("DIR [DIR...]");
  const auto r = parse_command_line(options, argc, argv);
  if (print_help_if_asked(options, r)) return 0;
  if (!r.count("dir")) throw UsageError("the run folder DIR is required");
  const int w = r["width"].as<int>(), h = r["height"].as<int>();
  if (w < 200 || w > 8000 || h < 150 || h > 8000) throw UsageError("--width must be in 200..8000 and --height in 150..8000");
  const auto dirs = r["dir"].as<std::vector<std::string>>();
  if (dirs.size() > 1) {  // overlay: the legend names each run by its folder
    const fs::path out = r.count("out") ? fs::path(r["out"].as<std::string>()) : fs::path("loss_compare.png");
    if (out.extension() != ".png") throw UsageError("--out must end in .png");
    std::vector<viz::NamedRun> runs;
    for (const std::string& d : dirs) {
      fs::path run = d, m = d;
      if (fs::is_directory(run)) m = run / "metrics.jsonl";
      else run = run.parent_path();
      runs.push_back({fs::weakly_canonical(run).filename().string(), viz::read_metrics(m.string())});
    }
    const std::string title = r.count("title") ? r["title"].as<std::string>() : "loss and learning rate";
    const auto img = viz::render_runs_plot(runs, title, w, h);
    img.save_png(out.string());
    std::cout << "plot: " << runs.size() << " runs\nwrote " << out.string() << " (" << img.width() << "x" << img.height() << ")\n";
    return 0;
  }
  fs::path dir = dirs.front(), metrics = dir;
  if (fs::is_directory(dir)) metrics = dir / "metrics.jsonl";
  else dir = dir.parent_path();
  const fs::path out = r.count("out") ? fs::path(r["out"].as<std::string>()) : dir / "loss.png";
  if (out.extension() != ".png") throw UsageError("--out must end in .png");

  const auto rows = viz::read_metrics(metrics.string());
  size_t evals = 0;
  for (const auto& row : rows) evals += row.val_loss.has_value();
  const std::string title = r.count("title") ? r["title"].as<std::string>()
                                             : fs::weakly_canonical(dir).filename().string() + ": loss and learning rate";
  const auto img = viz::render_loss_plot(rows, title, w, h);
  img.save_png(out.string());
  std::cout << "plot: " << rows.size() << " lines (" << evals << " evaluations, steps " << rows.front().iter << ".."
            << rows.back().iter << ") from " << metrics.string() << "\nwrote " << out.string() << " (" << img.width()
            << "x" << img.height() << ")\n";
  return 0;
}

}  // namespace ag::cli
