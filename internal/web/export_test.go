package web

// APIRoutes returns the patterns Handler registered for the API.
func (s *Server) APIRoutes() []string { return append([]string(nil), s.apiRoutes...) }
