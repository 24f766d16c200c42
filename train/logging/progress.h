// The progress line `attograd train` redraws on a terminal, fitted to its width: a line longer
// than the terminal wraps, and "\r" then only returns to the start of its last row, so every
// redraw would leave a row behind (about 2000 of them for `make train` at 80 columns).
#pragma once
#include <cstdint>
#include <string>

namespace ag::train {

struct Progress {
  int64_t done = 0, total = 0;  // steps
  double loss = 0, lr = 0;
  double tokens_per_s = 0;  // 0: not known yet (not shown)
  double eta_s = 0;         // with tokens_per_s
  double mfu = 0;           // model FLOPs utilisation, 0..1 (train/flops.h); 0: not shown
  double ms_per_step = 0;   // with tokens_per_s; 0: not shown
};

// "1m05s", or "2h03m" from an hour on.
std::string format_duration(double seconds);

// "[#####.....] 123/2000  loss 2.3456  lr 1.00e-03  41.2 ms/step  24123 tok/s  mfu 41%  ETA 1m23s"
// in at most columns - 1 characters (a terminal may wrap when the last column is written).
// When it does not fit, ms/step and the MFU go first, then the learning rate, then tokens/s,
// then the loss, then the bar; what is left is cut. Plain ASCII, no escape codes.
std::string progress_line(const Progress& p, int columns);

// The width of the terminal on fd (ioctl TIOCGWINSZ), else $COLUMNS, else 80.
int terminal_columns(int fd);

}  // namespace ag::train
