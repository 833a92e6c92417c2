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
// them with the rest of the header.
func cutLinkParams(h string) (params []string, rest string) {
	inQuote := false
	start := 0
	for i := 0; i < len(h); i++ {
		switch c := h[i]; {
		case c == '"':
			inQuote = !inQuote
		case c == '\\' && inQuote && i+1 < len(h):
			i++
		case c == ';' && !inQuote:
			params = appendParam(params, h[start:i])
			start = i + 1
		case c == ',' && !inQuote:
			return appendParam(params, h[start:i]), h[i+1:]
		}
	}
	return appendParam(params, h[start:]), ""
}

func appendParam(params []string, p string) []string {
	if p = strings.TrimSpace(p); p != "" {
		params = append(params, p)
	}
	return params
}
