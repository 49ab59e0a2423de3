// Command gensecrets writes the files the kustomize components of
// deploy/kubernetes turn into Secrets (docs/install.md):
//
//	go run ./deploy/kubernetes/gensecrets            # both, for a trial
//	go run ./deploy/kubernetes/gensecrets -tls=false # basic auth only (cert-manager issues the TLS pair)
//
// The files are ignored by git; run it again to rotate them.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/slowpath/slowpath/internal/trialsecret"
)

func main() {
	dir := flag.String("dir", "deploy/kubernetes/components", "the components directory")
	tls := flag.Bool("tls", true, "write a self-signed CA and server pair into selfsigned-tls/")
	auth := flag.Bool("auth", true, "write the scrape password and web.yml into basic-auth/")
	flag.Parse()
	if err := run(*dir, *tls, *auth); err != nil {
		fmt.Fprintln(os.Stderr, "gensecrets:", err)
		os.Exit(1)
	}
}

func run(dir string, tls, auth bool) error {
	if tls {
		if err := trialsecret.WriteTLS(filepath.Join(dir, "selfsigned-tls")); err != nil {
			return err
		}
	}
	if auth {
		if err := trialsecret.WriteAuth(filepath.Join(dir, "basic-auth")); err != nil {
			return err
		}
	}
	return nil
}
