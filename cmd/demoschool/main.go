// Command demoschool runs the demo legacy school: the upstream web server
// that the schoolgate gateway is put in front of. See package demoschool.
//
//	demoschool -listen 127.0.0.1:9080 [-catalog catalog.json] [-recorder=false]
//	           [-assertion-issuer <gateway origin> [-assertion-jwks <url>] [-assertion-audience <aud>]]
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
	"strings"
	"syscall"
	"time"

	"github.com/schoolgate/schoolgate/demoschool"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:9080", "address to listen on; keep it on loopback, the school trusts X-School-* headers")
	catalogPath := flag.String("catalog", "", "catalog feed JSON file (default: the bundled demoschool/catalog.json)")
	record := flag.Bool("recorder", true, "serve GET /__demo/last-request (a test aid that shows the last API request's headers)")
	assertionIssuer := flag.String("assertion-issuer", "", "verify the gateway's X-School-Assertion on the protected APIs: the gateway's issuer (site origin); off when empty")
	assertionJWKS := flag.String("assertion-jwks", "", "the gateway's JWKS URL (default: <assertion-issuer>/.well-known/jwks.json)")
	assertionAudience := flag.String("assertion-audience", "", "the assertion's expected aud (default: http://<listen>, the gateway's default for this upstream)")
	flag.Parse()

	opts := demoschool.Options{DisableRecorder: !*record}
	var err error
	if opts.Assertion, err = assertionConfig(*assertionIssuer, *assertionJWKS, *assertionAudience, *listen); err != nil {
		log.Fatal(err)
	}
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
	if a := opts.Assertion; a != nil {
		fmt.Fprintf(os.Stderr, "protected APIs require an identity assertion: iss %s, aud %s, keys %s\n", a.Issuer, a.Audience, a.JWKSURL)
	}
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}

// assertionConfig is the identity-assertion check the flags ask for, nil
// when -assertion-issuer is not given. The defaults match the gateway's:
// its JWKS under the issuer, and this server's origin as the audience.
func assertionConfig(issuer, jwksURL, audience, listen string) (*demoschool.AssertionConfig, error) {
	if issuer == "" {
		if jwksURL != "" || audience != "" {
			return nil, errors.New("-assertion-jwks and -assertion-audience need -assertion-issuer")
		}
		return nil, nil
	}
	c := &demoschool.AssertionConfig{Issuer: strings.TrimSuffix(issuer, "/"), JWKSURL: jwksURL, Audience: audience}
	if c.JWKSURL == "" {
		c.JWKSURL = c.Issuer + "/.well-known/jwks.json"
	}
	if c.Audience == "" {
		c.Audience = "http://" + listen
	}
	return c, c.Validate()
}
