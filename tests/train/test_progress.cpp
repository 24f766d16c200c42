// The progress line of `attograd train` on a terminal: fitted to the width, fields dropped in
// order, and the width read from the terminal or $COLUMNS. (tests/cli/check_progress_tmux.py
// runs the real thing in an 80-column tmux.)
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "tests/test_util.h"
#include "train/logging/progress.h"

using namespace ag::train;
using ag::testing_util::ScopedEnv;

namespace {
const Progress kTypical{123, 2000, 2.3456, 1e-3, 24123, 83};

}  // namespace

TEST(Progress, FormatsDurations) {
  EXPECT_EQ(format_duration(0), "0m00s");
  EXPECT_EQ(format_duration(83), "1m23s");
  EXPECT_EQ(format_duration(3725), "1h02m");
}

TEST(Progress, FillsAnEightyColumnTerminalWithoutWrapping) {
  const std::string line = progress_line(kTypical, 80);
  EXPECT_EQ(line, "[#.................] 123/2000  loss 2.3456  lr 1.00e-03  24123 tok/s  ETA 1m23s");
  EXPECT_EQ(line.size(), 79u);  // the last column stays empty: some terminals wrap on it
}

TEST(Progress, DropsFieldsInOrderWhenNarrow) {
  // lr first, then tok/s, then the loss; the counter and the ETA stay.
  EXPECT_EQ(progress_line(kTypical, 70), "[........] 123/2000  loss 2.3456  lr 1.00e-03  24123 tok/s  ETA 1m23s");
  EXPECT_EQ(progress_line(kTypical, 69), "[#...................] 123/2000  loss 2.3456  24123 tok/s  ETA 1m23s");
  EXPECT_EQ(progress_line(kTypical, 56), "[#...................] 123/2000  loss 2.3456  ETA 1m23s");
  EXPECT_EQ(progress_line(kTypical, 50), "[..............] 123/2000  loss 2.3456  ETA 1m23s");
  EXPECT_EQ(progress_line(kTypical, 40), "[#................] 123/2000  ETA 1m23s");
  EXPECT_EQ(progress_line(kTypical, 10), "123/2000 ");  // no room for a bar: cut
  // Wide: the bar stops growing at 40.
  EXPECT_EQ(progress_line(kTypical, 200),
            "[##......................................] 123/2000  loss 2.3456  lr 1.00e-03  24123 tok/s  ETA 1m23s");
  for (int columns = 0; columns <= 200; ++columns)
    EXPECT_LE(progress_line(kTypical, columns).size(), static_cast<size_t>(std::max(columns - 1, 1))) << columns;
}

TEST(Progress, ShowsTheMfuWhenThereIsRoomAndDropsItFirst) {
  Progress p = kTypical;
  p.mfu = 0.4137;
  EXPECT_EQ(progress_line(p, 120),
            "[##......................................] 123/2000  loss 2.3456  lr 1.00e-03  24123 tok/s  mfu 41%  ETA 1m23s");
  EXPECT_EQ(progress_line(p, 80), "[.........] 123/2000  loss 2.3456  lr 1.00e-03  24123 tok/s  mfu 41%  ETA 1m23s");
  EXPECT_EQ(progress_line(p, 78), progress_line(kTypical, 78));  // two columns less: it is the first to go
}

TEST(Progress, ShowsMsPerStepWhenThereIsRoomAndDropsItWithTheMfu) {
  Progress p = kTypical;
  p.mfu = 0.4137;
  p.ms_per_step = 31.84;
  EXPECT_EQ(progress_line(p, 140), "[##......................................] 123/2000  loss 2.3456  lr 1.00e-03  31.8 ms/step  "
                                   "24123 tok/s  mfu 41%  ETA 1m23s");
  EXPECT_EQ(progress_line(p, 80), progress_line(kTypical, 80));  // on 80 columns both go first
}

TEST(Progress, NoRateYetShowsNoRateAndNoEta) {
  const std::string line = progress_line({1, 2000, 4.2, 1e-5, 0, 0}, 80);
  EXPECT_EQ(line.find("tok/s"), std::string::npos);
  EXPECT_EQ(line.find("ETA"), std::string::npos);
  EXPECT_NE(line.find("1/2000  loss 4.2000  lr 1.00e-05"), std::string::npos);
  EXPECT_EQ(progress_line({2000, 2000, 1, 1, 1, 0}, 40), "[################] 2000/2000  ETA 0m00s");  // full at the end
}

TEST(Progress, TerminalColumnsFallBackToColumnsThenEighty) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);  // a pipe has no window size
  {
    ScopedEnv env("COLUMNS", "132");
    EXPECT_EQ(terminal_columns(fds[1]), 132);
  }
  {
    ScopedEnv env("COLUMNS", "wide");
    EXPECT_EQ(terminal_columns(fds[1]), 80);
  }
  {
    ScopedEnv env("COLUMNS", nullptr);
    EXPECT_EQ(terminal_columns(fds[1]), 80);
  }
  close(fds[0]);
  close(fds[1]);
}
