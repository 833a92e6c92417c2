package github

import "strings"

// nextLink returns the target of the rel="next" link in an RFC 8288 Link
// header, as GitHub sends for paginated lists:
//
//	<https://api.github.com/repositories/1/issues?page=2>; rel="next", <...page=5>; rel="last"
//
// It tolerates unquoted and multi-valued rel parameters, other
// parameters, and commas inside quoted values or the URL brackets.
func nextLink(h string) (string, bool) {
	for {
		i := strings.IndexByte(h, '<')
		if i < 0 {
			return "", false
		}
		h = h[i+1:]
		end := strings.IndexByte(h, '>')
		if end < 0 {
			return "", false
		}
		target := h[:end]
		h = h[end+1:]
		params, rest := cutLinkParams(h)
		h = rest
		for _, p := range params {
			name, value, _ := strings.Cut(p, "=")
			if !strings.EqualFold(strings.TrimSpace(name), "rel") {
				continue
			}
			for _, rel := range strings.Fields(strings.Trim(strings.TrimSpace(value), `"`)) {
				if strings.EqualFold(rel, "next") {
					return strings.TrimSpace(target), true
				}
			}
		}
	}
}

// cutLinkParams splits the ";"-separated parameters that follow a link
// target, up to the "," that ends the link (outside quotes), and returns
// them with the rest of the header. Text between the target and the first
// ";" is not a parameter (RFC 8288 allows only whitespace there) and is
// dropped.
func cutLinkParams(h string) (params []string, rest string) {
	inQuote := false
	start := -1 // no ";" seen yet
	add := func(end int) {
		if start >= 0 {
			params = appendParam(params, h[start:end])
		}
	}
	for i := 0; i < len(h); i++ {
		switch c := h[i]; {
		case c == '"':
			inQuote = !inQuote
		case c == '\\' && inQuote && i+1 < len(h):
			i++
		case c == ';' && !inQuote:
			add(i)
			start = i + 1
		case c == ',' && !inQuote:
			add(i)
			return params, h[i+1:]
		}
	}
	add(len(h))
	return params, ""
}

func appendParam(params []string, p string) []string {
	if p = strings.TrimSpace(p); p != "" {
		params = append(params, p)
	}
	return params
}
