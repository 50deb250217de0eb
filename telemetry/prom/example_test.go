package prom_test

import (
	"log"
	"net/http"

	"github.com/rayflow/rayflow/telemetry/prom"
)

// Importing prom installs its recorder: from then on the engines, the
// durable worker and the progress sinks record into prom.M. A program
// with its own HTTP server mounts Handler; the others call ServeMetrics.
func ExampleHandler() {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", prom.Handler())
	log.Fatal(http.ListenAndServe("127.0.0.1:9090", mux))
}

func ExampleServeMetrics() {
	addr, stop, err := prom.ServeMetrics("127.0.0.1:0") // port 0: any free port
	if err != nil {
		log.Fatal(err)
	}
	defer stop()
	log.Printf("metrics at http://%s/metrics", addr)
	// ... run the worker or the flows ...
}
