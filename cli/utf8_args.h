// Every argument of every command is UTF-8 text, or the command is refused before it starts.
//
// attograd writes the names and text it is given into JSON (metrics, metadata, the explore
// page's data, trace.json), TOML (config.toml), TensorBoard's events and HTML, and each of these
// holds UTF-8 only. A file name in another encoding (Latin-1 "caf\xe9.txt") used to train the
// whole budget and then fail writing the checkpoint's metadata, or leave a run folder that could
// not be resumed. Checked once, at the start, for all commands: the flag is named, and the
// name is shown with its bad bytes as \xNN.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace ag::cli {

// The byte offset of the first byte of s that does not belong to well-formed UTF-8 (RFC 3629:
// no overlong forms, no surrogates, nothing beyond U+10FFFF), or nullopt when s is UTF-8.
std::optional<size_t> first_non_utf8(std::string_view s);

// s with every byte that is not part of well-formed UTF-8 written as \xNN (for a message).
std::string shown_with_escapes(std::string_view s);

// The one-line reason the arguments argv[1..argc) cannot be used ("--data: the name
// 'caf\xE9.txt' is not UTF-8 ..."), or "" when all are UTF-8. An argument is named by the flag
// it belongs to (--flag VALUE or --flag=VALUE), else by its position.
std::string non_utf8_argument(int argc, char** argv);

}  // namespace ag::cli
