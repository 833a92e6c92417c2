package markdown_test

import (
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/golden"
	"github.com/baton-agent/baton/internal/markdown"
)

// TestRenderGolden renders the plans under testdata (a table, hostile
// markup, very long lines) and compares with the .html beside each; every
// output also passes checkSafe.
func TestRenderGolden(t *testing.T) {
	t.Parallel()
	srcs, err := filepath.Glob("testdata/*.md")
	if err != nil || len(srcs) == 0 {
		t.Fatalf("no plans under testdata: %v", err)
	}
	for _, p := range srcs {
		t.Run(filepath.Base(p), func(t *testing.T) {
			t.Parallel()
			src, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			out, err := markdown.Render(string(src))
			if err != nil {
				t.Fatalf("Render(%s) = %v", p, err)
			}
			got := string(out)
			if err := checkSafe(string(src), got); err != nil {
				t.Errorf("Render(%s): %v", p, err)
			}
			golden.CheckString(t, strings.TrimSuffix(filepath.Base(p), ".md")+".html", got)
		})
	}
}

// TestRenderHostile names what must never reach the page, whatever the
// golden file says.
func TestRenderHostile(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("testdata/hostile.md")
	if err != nil {
		t.Fatal(err)
	}
	got := render(t, string(src))
	// Text has every < escaped, so these are the markup, all of it.
	markup := strings.ToLower(strings.Join(regexp.MustCompile(`<[^>]*>`).FindAllString(got, -1), ""))
	for _, bad := range []string{"<script", "<img", "<div>", "<b>", "onclick", "onerror", "onload", `"onmouseover`, "javascript:", "data:", "vbscript:", "file:", `href="../`, `href="#`, `href="/`} {
		if strings.Contains(markup, bad) {
			t.Errorf("Render(hostile.md)'s markup contains %q", bad)
		}
	}
	for _, want := range []string{
		"&lt;script&gt;alert(1)&lt;/script&gt;", // raw HTML as text
		`<a href="https://evil.example/pixel.png?who=reviewer" rel="noreferrer nofollow">image: tracking pixel</a>`, // an image as a link
		`<a href="mailto:someone@example.com" rel="noreferrer nofollow">`,
		"x\uFFFDy",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Render(hostile.md) lacks %q:\n%s", want, got)
		}
	}
}

// TestRenderLines checks the line each block names against the source.
func TestRenderLines(t *testing.T) {
	t.Parallel()
	src := "# Title\n\nA paragraph\nover two lines.\n\n- one\n- two\n\n```go\nfunc f() {}\n\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n---\n"
	got := render(t, src)
	for _, want := range []string{
		`<h3 data-line="1">Title</h3>`,
		`<p data-line="3" data-end="4">A paragraph` + "\n" + `over two lines.</p>`,
		`<ul data-line="6" data-end="7"><li data-line="6">one</li><li data-line="7">two</li></ul>`,
		`<pre tabindex="0" data-line="9" data-end="11">`,
		`<span data-line="10">func f() {}</span><span data-line="11"></span>`,
		`<table data-line="14" data-end="16"><thead><tr data-line="14">`,
		`<tr data-line="16"><td>1</td>`,
		`<hr data-line="18">`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Render(%q) lacks %q:\n%s", src, want, got)
		}
	}
}

// TestRenderBounds: past MaxSource or MaxNesting, Render says why and
// the caller shows the text (goldmark's parse is not linear there).
func TestRenderBounds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		src, err string
	}{
		{strings.Repeat(strings.Repeat("a", 99)+"\n", markdown.MaxSource/100), ""},
		{strings.Repeat("a", markdown.MaxSource+1), "it is over 64 KiB"},
		{"ok\n" + strings.Repeat("> ", markdown.MaxNesting) + "x", ""},
		{"ok\n" + strings.Repeat(">", markdown.MaxNesting+1) + "x", "its line 2 nests 33 blocks deep, over 32"},
		{strings.Repeat("- 1. * 2) + ", 7) + "x", "its line 1 nests 35 blocks deep, over 32"},
		{strings.Repeat("-", 1000) + "\n" + strings.Repeat("1.", 1000), ""}, // markers need a space after them
		{strings.Repeat("a", markdown.MaxLine) + "\n", ""},
		{"\n\n" + strings.Repeat("a", markdown.MaxLine+1), "its line 3 is over 8 KiB"},
	} {
		_, err := markdown.Render(tc.src)
		if got := fmt.Sprint(err); tc.err == "" && err != nil || tc.err != "" && got != tc.err {
			t.Errorf("Render(%.40q…) = %v, want %q", tc.src, err, tc.err)
		}
	}
}

func render(t *testing.T, src string) string {
	t.Helper()
	out, err := markdown.Render(src)
	if err != nil {
		t.Fatalf("Render(%.60q) = %v", src, err)
	}
	return string(out)
}

func TestSafeURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want string // "" when refused
	}{
		{"https://example.com/a?b=c#d", "https://example.com/a?b=c#d"},
		{"HTTP://Example.com", "HTTP://Example.com"},
		{"mailto:a@example.com", "mailto:a@example.com"},
		{"https://example.com/a b", "https://example.com/a%20b"},
		{"javascript:alert(1)", ""},
		{"JavaScript:alert(1)", ""},
		{"&#106;avascript:alert(1)", ""},
		{" javascript:alert(1)", ""},
		{"java\tscript:alert(1)", ""},
		{"data:text/html,<script>", ""},
		{"vbscript:x", ""},
		{"file:///etc/passwd", ""},
		{"//evil.example/x", ""},
		{"/api/deliveries", ""},
		{"../x", ""},
		{"#actions", ""},
		{"https:evil", ""},
		{"mailto:", ""},
		{`https://example.com/"onmouseover="x`, "https://example.com/%22onmouseover=%22x"},
	} {
		got, ok := markdown.SafeURL([]byte(tc.in))
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("SafeURL(%q) = %q, %v, want %q", tc.in, got, ok, tc.want)
		}
	}
}

// FuzzRender: for any source, the HTML holds only allow-listed elements
// and attributes, balanced; every href is a web or mail address; every
// line range lies within the source, first before last.
func FuzzRender(f *testing.F) {
	for _, p := range []string{"table.md", "hostile.md", "long.md"} {
		b, err := os.ReadFile(filepath.Join("testdata", p))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	for _, s := range []string{"", "\n", "\r\n\r\n", "> > > > x", "- a\n  - b\n    - c", "<a href=x>", "[x](<javascript:a>)", "`<b>`", "&#x3c;script&#x3e;", "| a |\n|--|\n| <b> |", "```\n", "<!--", "* [ ] x", "a  \nb", "\x00", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		out, err := markdown.Render(src)
		if err != nil {
			if len(src) <= markdown.MaxSource && !strings.Contains(err.Error(), "nests") && !strings.Contains(err.Error(), "KiB") {
				t.Fatalf("Render(%q) = %v", src, err)
			}
			return
		}
		got := string(out)
		if err := checkSafe(src, got); err != nil {
			t.Fatalf("Render(%q) = %q: %v", src, got, err)
		}
	})
}

// allowed is every element Render may write, with the attributes each may carry.
var allowed = map[string][]string{
	"p": nil, "h3": nil, "h4": nil, "h5": nil, "h6": nil, "hr": nil, "br": nil,
	"pre": {"tabindex"}, "code": nil, "span": nil, "blockquote": nil,
	"ul": nil, "ol": {"start"}, "li": nil,
	"div": {"class", "tabindex", "role", "aria-label"}, "table": nil, "thead": nil, "tbody": nil, "tr": nil,
	"th": {"class", "scope"}, "td": {"class"},
	"em": nil, "strong": nil, "del": nil, "a": {"href", "rel"},
}

var void = map[string]bool{"hr": true, "br": true}

var (
	tagRE  = regexp.MustCompile(`^<(/?)([a-z0-9]+)((?: [a-z-]+="[^"<>]*")*)>`)
	attrRE = regexp.MustCompile(` ([a-z-]+)="([^"<>]*)"`)
)

// checkSafe is the property: an error names the first thing in out that
// a safe rendering of src could not hold.
func checkSafe(src, out string) error {
	lines := strings.Count(src, "\n") + 1
	var open []string
	for i := 0; i < len(out); {
		j := strings.IndexAny(out[i:], "<>")
		if j < 0 {
			break
		}
		i += j
		if out[i] == '>' {
			return fmt.Errorf("a bare > at %d", i)
		}
		m := tagRE.FindStringSubmatch(out[i:])
		if m == nil {
			return fmt.Errorf("a < that starts no allowed tag at %d: %.40q", i, out[i:])
		}
		closing, name, attrs := m[1] == "/", m[2], m[3]
		perm, ok := allowed[name]
		if !ok {
			return fmt.Errorf("element <%s> is not allowed", name)
		}
		if closing {
			if len(open) == 0 || open[len(open)-1] != name {
				return fmt.Errorf("</%s> closes %v", name, open)
			}
			open = open[:len(open)-1]
		} else if !void[name] {
			open = append(open, name)
		}
		first := 0
		for _, a := range attrRE.FindAllStringSubmatch(attrs, -1) {
			key, val := a[1], html.UnescapeString(a[2])
			switch key {
			case "data-line", "data-end":
				n, err := strconv.Atoi(val)
				if err != nil || n < 1 || n > lines {
					return fmt.Errorf("<%s %s=%q> outside the source's %d lines", name, key, val, lines)
				}
				if key == "data-line" {
					first = n
				} else if n <= first {
					return fmt.Errorf("<%s> ends at line %d, not after its first %d", name, n, first)
				}
				continue
			case "href":
				low := strings.ToLower(val)
				if !strings.HasPrefix(low, "https://") && !strings.HasPrefix(low, "http://") && !strings.HasPrefix(low, "mailto:") {
					return fmt.Errorf("href %q is not a web or mail address", val)
				}
			}
			found := false
			for _, p := range perm {
				found = found || p == key
			}
			if !found {
				return fmt.Errorf("<%s> carries attribute %s", name, key)
			}
		}
		i += len(m[0])
	}
	if len(open) > 0 {
		return fmt.Errorf("elements left open: %v", open)
	}
	return nil
}
