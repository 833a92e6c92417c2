package web_test

import (
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/baton-agent/baton/internal/sqlstore"
)

// BenchmarkRoutes reads each dashboard page and API route of a server
// holding 20 deliveries, from parallel clients on loopback: what a page
// view costs the server. bench/serve measures the whole server process
// under load.
func BenchmarkRoutes(b *testing.B) {
	e := newEnv(b, sqlstore.SQLite)
	var ids []string
	for i := range 20 {
		ids = append(ids, e.create(fmt.Sprintf("Delivery %d", i)).ID)
	}
	client := e.srv.Client()
	client.Transport.(*http.Transport).MaxIdleConnsPerHost = 64
	for _, route := range []string{"/", "/board", "/deliveries/%s", "/api/deliveries", "/api/deliveries/%s"} {
		b.Run(route, func(b *testing.B) {
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					path := route
					if route[len(route)-1] == 's' && route[len(route)-2] == '%' {
						path = fmt.Sprintf(route, ids[i%len(ids)])
					}
					i++
					resp, err := client.Get(e.srv.URL + path)
					if err != nil {
						b.Fatal(err)
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						b.Fatalf("GET %s = %d", path, resp.StatusCode)
					}
				}
			})
		})
	}
}
