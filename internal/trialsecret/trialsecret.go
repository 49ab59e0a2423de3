// Package trialsecret writes what the secure manifests of deploy/kubernetes
// read from Secrets, for a trial without cert-manager: a throwaway CA and
// a server certificate signed by it (the files cert-manager writes:
// ca.crt, tls.crt, tls.key), and a scrape password with the agent's
// exporter-toolkit web config holding its bcrypt hash.
package trialsecret

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// Username is the user Prometheus scrapes as.
const Username = "prometheus"

// DNSNames are the names the certificate is valid for: the headless
// Service's. The ServiceMonitor verifies the agent against the first
// fully qualified one (tlsConfig.serverName), whatever node IP it scrapes.
var DNSNames = []string{"slowpath-agent.slowpath.svc", "slowpath-agent.slowpath", "slowpath-agent"}

// Validity of the trial certificates.
const Validity = 365 * 24 * time.Hour

// WriteTLS writes ca.crt, tls.crt and tls.key into dir.
func WriteTLS(dir string) error {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	ca := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "slowpath trial CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(Validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	leaf := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: DNSNames[0]},
		DNSNames:     DNSNames,
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(Validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	for name, block := range map[string]*pem.Block{
		"ca.crt":  {Type: "CERTIFICATE", Bytes: caDER},
		"tls.crt": {Type: "CERTIFICATE", Bytes: leafDER},
		"tls.key": {Type: "PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(block), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// WriteAuth writes username and password (for Prometheus) and web.yml
// (for the agent: TLS from tls.crt and tls.key beside it, and the
// password's bcrypt hash) into dir.
func WriteAuth(dir string) error {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return err
	}
	password := hex.EncodeToString(b)
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return err
	}
	web := fmt.Sprintf(`# exporter-toolkit web config of slowpath agent (docs/agent.md).
# tls.crt and tls.key are projected next to this file from the TLS Secret.
tls_server_config:
  cert_file: tls.crt
  key_file: tls.key
  min_version: TLS12
basic_auth_users:
  %s: %s
`, Username, hash)
	for name, data := range map[string]string{"username": Username, "password": password, "web.yml": web} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			return err
		}
	}
	return nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err)
	}
	return n
}
