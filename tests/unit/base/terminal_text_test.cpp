// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include "nps/base/terminal_text.hpp"

using nps::escape_terminal;
using nps::KeepControls;

TEST_CASE("terminal escapes: printable text and valid UTF-8 pass unchanged")
{
    CHECK(escape_terminal("hello, world {\"a\":1} \\ ~") == "hello, world {\"a\":1} \\ ~");
    CHECK(escape_terminal("Grüße, 日本, 🙂") == "Grüße, 日本, 🙂");
    CHECK(escape_terminal("") == "");
}

TEST_CASE("terminal escapes: C0, ESC and DEL become \\xNN")
{
    CHECK(escape_terminal("\x1b]0;pwned\x07\x1b[2J") == "\\x1b]0;pwned\\x07\\x1b[2J");
    CHECK(escape_terminal(std::string_view("a\0b", 3)) == "a\\x00b");
    CHECK(escape_terminal("a\rb\x7f") == "a\\x0db\\x7f");
    CHECK(escape_terminal("line\nnext\tcol") == "line\\x0anext\\x09col");
    CHECK(escape_terminal("line\nnext\tcol\r", KeepControls::newline_and_tab) == "line\nnext\tcol\\x0d");
    CHECK(escape_terminal("\x1b[31m", KeepControls::newline_and_tab) == "\\x1b[31m");
}

TEST_CASE("terminal escapes: C1 controls and bidi overrides become \\uNNNN")
{
    CHECK(escape_terminal("\xc2\x9b" "2J") == "\\u009b2J");  // U+009B CSI
    CHECK(escape_terminal("\xc2\x80\xc2\x9f\xc2\xa0") == "\\u0080\\u009f\xc2\xa0");  // NBSP is printable
    CHECK(escape_terminal("abc\xe2\x80\xae" "fed") == "abc\\u202efed");  // RIGHT-TO-LEFT OVERRIDE
    CHECK(escape_terminal("\xe2\x81\xa6x\xe2\x81\xa9") == "\\u2066x\\u2069");
}

TEST_CASE("terminal escapes: bytes outside valid UTF-8 become \\xNN")
{
    CHECK(escape_terminal("\x9b" "2J") == "\\x9b2J");            // a lone 8-bit CSI
    CHECK(escape_terminal("\xc0\x9b") == "\\xc0\\x9b");          // overlong
    CHECK(escape_terminal("\xed\xa0\x80") == "\\xed\\xa0\\x80");  // a surrogate
    CHECK(escape_terminal("\xe2\x80") == "\\xe2\\x80");          // cut short
    CHECK(escape_terminal("\xff") == "\\xff");
}
