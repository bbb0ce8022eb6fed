package report

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Visible makes text the traced program chose (a file name, an argv, a
// program's name) inert wherever tracecell prints it: on a terminal, in
// markdown, in a policy file's comment. Every rune unicode.IsPrint rejects
// becomes a visible escape (\n, \x1b, \u2028): C0 controls and DEL (a
// terminal's escape sequences, a carriage return that rewrites the line),
// C1 controls (U+009B starts an escape sequence on some terminals, YAML
// ends a line at U+0085), U+2028 and U+2029 (YAML ends lines there too),
// bidi and other format characters (U+202E reverses what a reviewer reads),
// and every space but ' '. So does each byte that is not UTF-8. What is
// left cannot end a line or change how the rest of it reads. tracecell's notices
// (Event.Summarize, Event.Detailed), every format of `tracecell report`
// but json, and every comment of a suggested policy go through it.
func Visible(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return r == utf8.RuneError || !unicode.IsPrint(r) }) < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsPrint(r):
			b.WriteString(s[i : i+n])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
		i += n
	}
	return b.String()
}
