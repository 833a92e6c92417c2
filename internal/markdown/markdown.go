// Package markdown renders markdown someone else wrote (a plan an agent
// committed) as HTML that is safe to put in a page, with every block
// naming the source lines it came from.
//
// goldmark parses (CommonMark, plus GitHub's tables, strikethrough,
// task lists and bare links); this package writes the HTML itself, from
// an allow-list: each node kind it knows becomes the one element it
// chose, and anything else becomes its text. So no element, attribute or
// URL reaches the page unless this file names it: raw HTML is shown as
// text, links keep only http, https and mailto addresses, images are
// never fetched (they become a link to their address), headings carry
// no ids (a plan could otherwise clobber the page's own).
//
// Each block element carries data-line, the 1-based line of the source
// it starts on, and data-end when it spans more: what a line note on the
// block names. A code block's lines carry one each.
package markdown

import (
	"bufio"
	"bytes"
	"fmt"
	"html/template"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// MaxDepth bounds how deep block containers (lists, quotes) nest in the
// output; deeper ones give their content without the container, so a
// hostile "> > > …" cannot build a page the browser chokes on.
const MaxDepth = 16

// goldmark's parse grows faster than its input on some hostile texts
// (a line of thousands of unclosed "[a](", quotes nested thousands
// deep: seconds at 64 KiB, minutes at 256 KiB), so Render refuses what
// is past these bounds and the caller shows the text.
const (
	// MaxSource is the longest source Render renders.
	MaxSource = 64 << 10
	// MaxLine is the longest line.
	MaxLine = 8 << 10
	// MaxNesting is the most container markers ("> ", "- ", "1. ") a
	// line may open with.
	MaxNesting = 32
)

// md parses; it never renders (Render writes the HTML), so goldmark's
// own renderer and its options for raw HTML play no part.
var md = goldmark.New(goldmark.WithExtensions(
	extension.Table, extension.Strikethrough, extension.TaskList, extension.Linkify,
))

// Render returns src as HTML for a page (see the package comment), or
// an error saying why it is not rendered: longer than MaxSource, a line
// longer than MaxLine, or one nested deeper than MaxNesting.
func Render(src string) (template.HTML, error) {
	if err := checkBounds(src); err != nil {
		return "", err
	}
	source := []byte(src)
	doc := md.Parser().Parse(text.NewReader(source), parser.WithContext(parser.NewContext()))
	r := &writer{src: source, lines: lineStarts(source)}
	r.w = bufio.NewWriter(&r.out)
	r.blocks(doc, 0)
	_ = r.w.Flush() // a bytes.Buffer's writes do not fail
	return template.HTML(r.out.String()), nil
}

// checkBounds says which bound src is past, if any.
func checkBounds(src string) error {
	if len(src) > MaxSource {
		return fmt.Errorf("it is over %d KiB", MaxSource>>10)
	}
	for i, line := range strings.Split(src, "\n") {
		if len(line) > MaxLine {
			return fmt.Errorf("its line %d is over %d KiB", i+1, MaxLine>>10)
		}
		n := 0
		for rest, ok := marker(line); ok; rest, ok = marker(rest) {
			n++
		}
		if n > MaxNesting {
			return fmt.Errorf("its line %d nests %d blocks deep, over %d", i+1, n, MaxNesting)
		}
	}
	return nil
}

// marker returns what follows the container marker line opens with,
// after spaces: a block quote's ">", or a list item's "-", "+", "*",
// "1." or "1)" and the space after it.
func marker(line string) (rest string, ok bool) {
	line = strings.TrimLeft(line, " \t")
	if strings.HasPrefix(line, ">") {
		return line[1:], true
	}
	n := len(line) - len(strings.TrimLeft(line, "0123456789"))
	switch {
	case n == 0 && len(line) >= 2 && strings.ContainsRune("-+*", rune(line[0])):
		n = 1
	case n > 0 && n <= 9 && len(line) >= n+2 && strings.ContainsRune(".)", rune(line[n])):
		n++
	default:
		return "", false
	}
	if len(line) > n && (line[n] == ' ' || line[n] == '\t') {
		return line[n+1:], true
	}
	return "", false
}

type writer struct {
	src   []byte
	lines []int // byte offset where each line starts
	out   bytes.Buffer
	w     *bufio.Writer
}

// lineStarts returns the offset of each line's first byte. Lines end at
// "\n", as the numbered source and the server's check of line notes count them.
func lineStarts(src []byte) []int {
	starts := []int{0}
	for i, c := range src {
		if c == '\n' && i+1 < len(src) {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// line returns the 1-based line holding byte offset off.
func (r *writer) line(off int) int {
	return sort.Search(len(r.lines), func(i int) bool { return r.lines[i] > off })
}

// span returns the first and last source line of block n: from where it
// opens to the last byte any of its descendants holds. ok is false for a
// block that holds no source at all.
func (r *writer) span(n ast.Node) (first, last int, ok bool) {
	lo, hi := -1, -1
	note := func(a, b int) { // bytes [a, b)
		if a < 0 || b <= a || b > len(r.src) {
			return
		}
		if lo < 0 || a < lo {
			lo = a
		}
		if b > hi {
			hi = b
		}
	}
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		if p := c.Pos(); p >= 0 && p < len(r.src) {
			note(p, p+1)
		}
		switch c := c.(type) {
		case *ast.Text:
			note(c.Segment.Start, c.Segment.Stop)
		case *ast.RawHTML:
			for i := 0; i < c.Segments.Len(); i++ {
				s := c.Segments.At(i)
				note(s.Start, s.Stop)
			}
		case *ast.HTMLBlock:
			if c.HasClosure() {
				note(c.ClosureLine.Start, c.ClosureLine.Stop)
			}
		}
		if c.Type() == ast.TypeBlock {
			lines := c.Lines()
			for i := 0; i < lines.Len(); i++ {
				s := lines.At(i)
				note(s.Start, s.Stop)
			}
		}
		return ast.WalkContinue, nil
	})
	if lo < 0 {
		return 0, 0, false
	}
	return r.line(lo), r.line(hi - 1), true
}

// open writes <tag data-line=… data-end=…> for block n, with extra
// attributes (already escaped) before the line range.
func (r *writer) open(tag string, n ast.Node, extra string) {
	r.w.WriteString("<" + tag + extra)
	if first, last, ok := r.span(n); ok {
		r.w.WriteString(` data-line="` + strconv.Itoa(first) + `"`)
		if last > first {
			r.w.WriteString(` data-end="` + strconv.Itoa(last) + `"`)
		}
	}
	r.w.WriteByte('>')
}

func (r *writer) close(tag string) { r.w.WriteString("</" + tag + ">") }

// blocks writes n's block children; depth counts the containers around them.
func (r *writer) blocks(n ast.Node, depth int) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		r.block(c, depth)
	}
}

func (r *writer) block(n ast.Node, depth int) {
	switch n := n.(type) {
	case *ast.Paragraph:
		r.open("p", n, "")
		r.inlines(n)
		r.close("p")
	case *ast.TextBlock: // a tight list item's text: no <p>, as GitHub shows it
		r.inlines(n)
	case *ast.Heading:
		// The plan sits under the page's h1 and its "Plan" h2.
		tag := "h" + strconv.Itoa(min(n.Level+2, 6))
		r.open(tag, n, "")
		r.inlines(n)
		r.close(tag)
	case *ast.ThematicBreak:
		r.open("hr", n, "")
	case *ast.CodeBlock:
		r.code(n)
	case *ast.FencedCodeBlock:
		r.code(n)
	case *ast.HTMLBlock:
		r.code(n) // shown as the text it is
	case *ast.Blockquote:
		r.container("blockquote", "", n, depth)
	case *ast.List:
		tag, extra := "ul", ""
		if n.IsOrdered() {
			tag = "ol"
			if n.Start != 1 {
				extra = ` start="` + strconv.Itoa(n.Start) + `"`
			}
		}
		r.container(tag, extra, n, depth)
	case *ast.ListItem:
		r.container("li", "", n, depth)
	case *east.Table:
		r.table(n)
	default:
		// A kind this file does not know: its content, never its markup.
		if n.Type() == ast.TypeBlock && n.HasChildren() {
			r.blocks(n, depth)
		} else if n.Type() == ast.TypeBlock {
			r.code(n)
		} else {
			r.inline(n)
		}
	}
}

// container writes a block that holds blocks, or only what it holds
// once containers nest past MaxDepth.
func (r *writer) container(tag, extra string, n ast.Node, depth int) {
	if depth >= MaxDepth {
		r.blocks(n, depth)
		return
	}
	r.open(tag, n, extra)
	r.blocks(n, depth+1)
	r.close(tag)
}

// code writes a block's lines as they are, one element per source line
// (so a note names the line), in a box that scrolls by itself: a long
// line never widens the page.
func (r *writer) code(n ast.Node) {
	r.open("pre", n, ` tabindex="0"`)
	r.w.WriteString("<code>")
	lines := n.Lines().Sliced(0, n.Lines().Len())
	if h, ok := n.(*ast.HTMLBlock); ok && h.HasClosure() {
		lines = append(lines, h.ClosureLine) // "-->" and the like: its text too
	}
	for _, s := range lines {
		v := bytes.TrimSuffix(s.Value(r.src), []byte("\n"))
		v = bytes.TrimSuffix(v, []byte("\r"))
		r.w.WriteString(`<span data-line="` + strconv.Itoa(r.line(s.Start)) + `">`)
		r.text(v)
		r.w.WriteString("</span>")
	}
	r.w.WriteString("</code></pre>")
}

// table writes a GitHub table in a box that scrolls by itself, one row
// a source line.
func (r *writer) table(t *east.Table) {
	first, _, _ := r.span(t)
	r.w.WriteString(`<div class="md-table" tabindex="0" role="region" aria-label="Table at line ` + strconv.Itoa(first) + `">`)
	r.open("table", t, "")
	for row := t.FirstChild(); row != nil; row = row.NextSibling() {
		cell, group := "td", ""
		if _, head := row.(*east.TableHeader); head {
			cell, group = "th", "thead"
			r.w.WriteString("<thead>")
		}
		r.open("tr", row, "")
		for c := row.FirstChild(); c != nil; c = c.NextSibling() {
			extra := ""
			if tc, ok := c.(*east.TableCell); ok {
				switch tc.Alignment {
				case east.AlignRight:
					extra = ` class="r"`
				case east.AlignCenter:
					extra = ` class="c"`
				}
			}
			if cell == "th" {
				extra += ` scope="col"`
			}
			r.w.WriteString("<" + cell + extra + ">")
			r.inlines(c)
			r.close(cell)
		}
		r.close("tr")
		if group != "" {
			r.close(group)
			r.w.WriteString("<tbody>")
		}
	}
	r.w.WriteString("</tbody></table></div>")
}

func (r *writer) inlines(n ast.Node) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		r.inline(c)
	}
}

func (r *writer) inline(n ast.Node) {
	switch n := n.(type) {
	case *ast.Text:
		v := n.Segment.Value(r.src)
		if n.IsRaw() {
			r.text(v)
		} else {
			r.markdownText(v)
		}
		switch {
		case n.HardLineBreak():
			r.w.WriteString("<br>")
		case n.SoftLineBreak():
			r.w.WriteByte('\n')
		}
	case *ast.String:
		if n.IsCode() || n.IsRaw() {
			r.text(n.Value)
		} else {
			r.markdownText(n.Value)
		}
	case *ast.CodeSpan:
		r.w.WriteString("<code>")
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			switch c := c.(type) {
			case *ast.Text:
				r.text(bytes.ReplaceAll(c.Segment.Value(r.src), []byte("\n"), []byte(" ")))
			case *ast.String:
				r.text(c.Value)
			}
		}
		r.w.WriteString("</code>")
	case *ast.Emphasis:
		tag := "em"
		if n.Level >= 2 {
			tag = "strong"
		}
		r.w.WriteString("<" + tag + ">")
		r.inlines(n)
		r.close(tag)
	case *east.Strikethrough:
		r.w.WriteString("<del>")
		r.inlines(n)
		r.w.WriteString("</del>")
	case *ast.Link:
		r.link(n.Destination, func() { r.inlines(n) })
	case *ast.AutoLink:
		dest := n.URL(r.src)
		if n.AutoLinkType == ast.AutoLinkEmail && !bytes.HasPrefix(bytes.ToLower(dest), []byte("mailto:")) {
			dest = append([]byte("mailto:"), dest...)
		}
		r.link(dest, func() { r.text(n.Label(r.src)) })
	case *ast.Image:
		// Never fetched: a page that loads what a plan names would tell
		// anyone who wrote it who reads it, and when.
		r.link(n.Destination, func() {
			r.w.WriteString("image: ")
			if n.HasChildren() {
				r.inlines(n)
			} else {
				r.text(n.Destination)
			}
		})
	case *ast.RawHTML:
		for i := 0; i < n.Segments.Len(); i++ {
			s := n.Segments.At(i)
			r.text(s.Value(r.src))
		}
	case *east.TaskCheckBox:
		if n.IsChecked {
			r.w.WriteString("☑ ")
		} else {
			r.w.WriteString("☐ ")
		}
	default:
		// A kind this file does not know: its text only.
		if n.HasChildren() {
			r.inlines(n)
		}
	}
}

// link writes an <a> around what label writes when dest is a web or
// mail address, else the label alone.
func (r *writer) link(dest []byte, label func()) {
	href, ok := SafeURL(dest)
	if !ok {
		label()
		return
	}
	r.w.WriteString(`<a href="`)
	r.w.WriteString(template.HTMLEscapeString(href))
	r.w.WriteString(`" rel="noreferrer nofollow">`)
	label()
	r.w.WriteString("</a>")
}

// SafeURL returns a link destination as written in markdown (backslash
// escapes and entities resolved, percent-encoded as needed) when it is
// an absolute http or https address with a host, or a mailto address;
// ok is false for anything else: javascript:, data:, vbscript:, file:,
// relative paths (they would resolve against the dashboard).
func SafeURL(dest []byte) (href string, ok bool) {
	s := string(util.URLEscape(dest, true))
	u, err := url.Parse(s)
	if err != nil {
		return "", false
	}
	switch u.Scheme {
	case "http", "https":
		ok = u.Host != "" && u.Opaque == ""
	case "mailto":
		ok = u.Opaque != ""
	}
	if !ok || strings.ContainsAny(s, "\x00\t\n\r \"'<>`") {
		return "", false
	}
	return s, true
}

// text writes v escaped, as it is.
func (r *writer) text(v []byte) {
	html.DefaultWriter.RawWrite(r.w, bytes.ToValidUTF8(bytes.ReplaceAll(v, []byte{0}, []byte("\uFFFD")), []byte("\uFFFD")))
}

// markdownText writes v escaped, with markdown's backslash escapes and
// character references resolved (as goldmark's own renderer does).
func (r *writer) markdownText(v []byte) {
	html.DefaultWriter.Write(r.w, bytes.ToValidUTF8(v, []byte("\uFFFD")))
}
