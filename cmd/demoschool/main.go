// Command demoschool runs the demo legacy school: the upstream web server
// that the schoolgate gateway is put in front of. See package demoschool.
//
//	demoschool -listen 127.0.0.1:9080 [-catalog catalog.json] [-recorder=false]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/schoolgate/schoolgate/demoschool"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:9080", "address to listen on; keep it on loopback, the school trusts X-School-* headers")
	catalogPath := flag.String("catalog", "", "catalog feed JSON file (default: the bundled demoschool/catalog.json)")
	record := flag.Bool("recorder", true, "serve GET /__demo/last-request (a test aid that shows the last API request's headers)")
	flag.Parse()

	opts := demoschool.Options{DisableRecorder: !*record}
	if *catalogPath != "" {
		data, err := os.ReadFile(*catalogPath)
		if err != nil {
			log.Fatal(err)
		}
		if opts.Catalog, err = demoschool.ParseCatalog(data); err != nil {
			log.Fatalf("%s: %v", *catalogPath, err)
		}
	}

	srv := &http.Server{
		Addr:              *listen,
		Handler:           demoschool.New(opts),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	fmt.Fprintf(os.Stderr, "demo school listening on http://%s\n", *listen)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}
