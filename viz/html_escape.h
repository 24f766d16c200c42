// Text that goes into a page attograd writes, made inert. Every page (the explore page, the
// explain page) puts user text in two places: the HTML itself (a title, a heading) and inline
// JSON inside <script>. Inside a <script> element the browser's parser looks for more than
// "</script": "<!--" followed by "<script" switches it into a state where the page's own
// closing tag is read as data, and the rest of the page (its script included) never runs. So
// no '<', '>' or '&' may reach a script element as itself, in any order.
#pragma once
#include <string>
#include <string_view>

namespace ag::viz {

// For HTML text and attribute values: & < > " ' as character references.
std::string html_text(std::string_view s);

// For JSON (nlohmann's dump) placed inside a <script> element: every '<', '>' and '&' becomes
// \u003c, \u003e, \u0026. They can only occur inside JSON strings, where the escape means the
// same character, so JSON.parse gives back exactly the text that was dumped.
std::string json_for_script(std::string_view json);

}  // namespace ag::viz
