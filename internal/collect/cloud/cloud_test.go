package cloud

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/snapshot"
)

// Every test talks to an httptest server on loopback; none leaves the host.

func bptr(b bool) *bool { return &b }

func withDMI(d *snapshot.DMI) *snapshot.Snapshot {
	return &snapshot.Snapshot{Host: &snapshot.Host{DMI: d}}
}

var (
	azureDMI = &snapshot.DMI{SysVendor: "Microsoft Corporation", ProductName: "Virtual Machine", ChassisAssetTag: azureAssetTag}
	awsDMI   = &snapshot.DMI{SysVendor: "Amazon EC2", ProductName: "i4i.2xlarge", BIOSVendor: "Amazon EC2"}
	gcpDMI   = &snapshot.DMI{SysVendor: "Google", ProductName: "Google Compute Engine", BIOSVendor: "Google"}
)

// azureIMDS is an answer shaped like api-version 2021-11-01 (trimmed).
const azureIMDS = `{"compute":{"location":"westeurope","vmSize":"Standard_E16d_v5",
 "securityProfile":{"encryptionAtHost":"true","secureBootEnabled":"false"},
 "storageProfile":{"resourceDisk":{"size":"614400"},"osDisk":{"diffDiskSettings":{"option":""},"name":"os"}}},
 "network":{}}`

type recorder struct {
	mu   sync.Mutex
	reqs []string
}

func (r *recorder) add(req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, req.Method+" "+req.URL.RequestURI())
}

func azureServer(t *testing.T, body string, rec *recorder) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.add(r)
		if r.Header.Get("Metadata") != "true" {
			http.Error(w, "missing Metadata header", http.StatusBadRequest)
			return
		}
		if r.URL.Path != "/metadata/instance" || r.URL.Query().Get("api-version") != "2021-11-01" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestAzure(t *testing.T) {
	rec := &recorder{}
	srv := azureServer(t, azureIMDS, rec)
	s := withDMI(azureDMI)
	Collect(context.Background(), Options{Endpoint: srv.URL}, s)
	want := &snapshot.Cloud{Provider: "azure", DetectedBy: "dmi", InstanceType: "Standard_E16d_v5", Region: "westeurope",
		Azure: &snapshot.AzureMeta{VMSize: "Standard_E16d_v5", EncryptionAtHost: bptr(true), ResourceDiskSizeMB: 614400}}
	if d := cmp.Diff(want, s.Cloud); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if len(s.Manifest.Errors) != 0 {
		t.Errorf("errors: %+v", s.Manifest.Errors)
	}
	if d := cmp.Diff([]string{"GET /metadata/instance?api-version=2021-11-01"}, rec.reqs); d != "" {
		t.Errorf("requests (-want +got):\n%s", d)
	}
}

func TestAzureVariants(t *testing.T) {
	tests := []struct {
		name, body string
		wantEAH    *bool
		wantEph    bool
		wantErr    string
	}{
		{"eah false", strings.Replace(azureIMDS, `"encryptionAtHost":"true"`, `"encryptionAtHost":"false"`, 1), bptr(false), false, ""},
		{"eah absent (older api)", strings.Replace(azureIMDS, `"encryptionAtHost":"true",`, ``, 1), nil, false, ""},
		{"eah as json bool", strings.Replace(azureIMDS, `"encryptionAtHost":"true"`, `"encryptionAtHost":true`, 1), bptr(true), false, ""},
		{"ephemeral os disk", strings.Replace(azureIMDS, `"option":""`, `"option":"Local"`, 1), bptr(true), true, ""},
		{"eah garbage", strings.Replace(azureIMDS, `"encryptionAtHost":"true"`, `"encryptionAtHost":"maybe"`, 1), nil, false, "is not true or false"},
		{"bad json", `{"compute":`, nil, false, "bad JSON"},
		{"no vmSize", `{"compute":{}}`, nil, false, "vmSize missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := azureServer(t, tt.body, &recorder{})
			s := withDMI(azureDMI)
			Collect(context.Background(), Options{Endpoint: srv.URL}, s)
			if s.Cloud == nil {
				t.Fatal("no cloud section")
			}
			if tt.wantErr != "" {
				if !strings.Contains(s.Cloud.MetadataError, tt.wantErr) || len(s.Manifest.Errors) != 1 {
					t.Fatalf("metadata error %q, manifest %+v; want %q", s.Cloud.MetadataError, s.Manifest.Errors, tt.wantErr)
				}
				return
			}
			if s.Cloud.MetadataError != "" {
				t.Fatal(s.Cloud.MetadataError)
			}
			if !cmp.Equal(tt.wantEAH, s.Cloud.Azure.EncryptionAtHost) || s.Cloud.Azure.EphemeralOSDisk != tt.wantEph {
				t.Errorf("got %+v", s.Cloud.Azure)
			}
		})
	}
}

func TestAWS(t *testing.T) {
	rec := &recorder{}
	const token = "AQAEAFakeTokenForTests=="
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.add(r)
		if r.URL.Path == "/latest/api/token" {
			if r.Method != http.MethodPut || r.Header.Get("X-aws-ec2-metadata-token-ttl-seconds") == "" {
				http.Error(w, "bad token request", http.StatusBadRequest)
				return
			}
			_, _ = w.Write([]byte(token))
			return
		}
		if r.Header.Get("X-aws-ec2-metadata-token") != token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		answers := map[string]string{
			"/latest/meta-data/instance-type":                   "i4i.2xlarge",
			"/latest/meta-data/placement/region":                "eu-west-1",
			"/latest/meta-data/block-device-mapping/":           "ami\nephemeral0\nroot",
			"/latest/meta-data/block-device-mapping/ami":        "/dev/xvda",
			"/latest/meta-data/block-device-mapping/ephemeral0": "sdb",
			"/latest/meta-data/block-device-mapping/root":       "/dev/xvda",
		}
		a, ok := answers[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(a))
	}))
	t.Cleanup(srv.Close)
	s := withDMI(awsDMI)
	Collect(context.Background(), Options{Endpoint: srv.URL + "/"}, s)
	want := &snapshot.Cloud{Provider: "aws", DetectedBy: "dmi", InstanceType: "i4i.2xlarge", Region: "eu-west-1",
		AWS: &snapshot.AWSMeta{InstanceType: "i4i.2xlarge",
			BlockDeviceMapping: map[string]string{"ami": "/dev/xvda", "ephemeral0": "sdb", "root": "/dev/xvda"}}}
	if d := cmp.Diff(want, s.Cloud); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if len(rec.reqs) == 0 || rec.reqs[0] != "PUT /latest/api/token" {
		t.Errorf("first request %v, want the IMDSv2 token PUT", rec.reqs)
	}
}

func TestGCP(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Metadata-Flavor") != "Google" {
			http.Error(w, "missing Metadata-Flavor", http.StatusForbidden)
			return
		}
		switch r.URL.RequestURI() {
		case "/computeMetadata/v1/instance/machine-type":
			_, _ = w.Write([]byte("projects/123456/machineTypes/n2-standard-8"))
		case "/computeMetadata/v1/instance/zone":
			_, _ = w.Write([]byte("projects/123456/zones/europe-west4-a"))
		case "/computeMetadata/v1/instance/disks/?recursive=true":
			_, _ = w.Write([]byte(`[{"deviceName":"persistent-disk-0","index":0,"interface":"NVME","mode":"READ_WRITE","type":"PERSISTENT"},
				{"deviceName":"local-ssd-0","index":1,"interface":"NVME","mode":"READ_WRITE","type":"LOCAL-SSD"}]`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	s := withDMI(gcpDMI)
	Collect(context.Background(), Options{Endpoint: srv.URL}, s)
	want := &snapshot.Cloud{Provider: "gcp", DetectedBy: "dmi", InstanceType: "n2-standard-8", Region: "europe-west4-a",
		GCP: &snapshot.GCPMeta{MachineType: "n2-standard-8", Disks: []snapshot.GCPDisk{
			{DeviceName: "persistent-disk-0", Type: "PERSISTENT", Interface: "NVME", Mode: "READ_WRITE"},
			{DeviceName: "local-ssd-0", Type: "LOCAL-SSD", Interface: "NVME", Mode: "READ_WRITE"}}}}
	if d := cmp.Diff(want, s.Cloud); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

func TestFetchOnlyWhenNamed(t *testing.T) {
	rec := &recorder{}
	srv := azureServer(t, azureIMDS, rec)
	// No cloud in DMI and no flag: nothing is fetched, no cloud section.
	s := withDMI(&snapshot.DMI{SysVendor: "QEMU", ProductName: "Standard PC (i440FX + PIIX, 1996)"})
	Collect(context.Background(), Options{Endpoint: srv.URL}, s)
	if s.Cloud != nil || len(rec.reqs) != 0 {
		t.Fatalf("fetched without a cloud: %+v %v", s.Cloud, rec.reqs)
	}
	// No host section at all: same.
	s = &snapshot.Snapshot{}
	Collect(context.Background(), Options{Endpoint: srv.URL}, s)
	if s.Cloud != nil || len(rec.reqs) != 0 {
		t.Fatalf("fetched without DMI: %v", rec.reqs)
	}
	// --cloud none wins over DMI.
	s = withDMI(azureDMI)
	Collect(context.Background(), Options{Cloud: "none", Endpoint: srv.URL}, s)
	if s.Cloud != nil || len(rec.reqs) != 0 {
		t.Fatalf("--cloud none fetched: %v", rec.reqs)
	}
	// --cloud azure forces it on a host whose DMI says nothing.
	s = withDMI(nil)
	Collect(context.Background(), Options{Cloud: "azure", Endpoint: srv.URL}, s)
	if s.Cloud == nil || s.Cloud.DetectedBy != "flag" || s.Cloud.InstanceType != "Standard_E16d_v5" {
		t.Fatalf("--cloud azure: %+v", s.Cloud)
	}
	// An unknown --cloud is an error in the manifest, nothing fetched.
	rec.reqs = nil
	s = withDMI(azureDMI)
	Collect(context.Background(), Options{Cloud: "oracle", Endpoint: srv.URL}, s)
	if s.Cloud != nil || len(rec.reqs) != 0 || len(s.Manifest.Errors) != 1 || !strings.Contains(s.Manifest.Errors[0].Message, "unknown cloud") {
		t.Fatalf("--cloud oracle: %+v %v %+v", s.Cloud, rec.reqs, s.Manifest.Errors)
	}
}

func TestEndpointFromEnv(t *testing.T) {
	rec := &recorder{}
	srv := azureServer(t, azureIMDS, rec)
	t.Setenv(EnvEndpoint, srv.URL)
	s := withDMI(azureDMI)
	Collect(context.Background(), Options{}, s)
	if s.Cloud == nil || s.Cloud.MetadataError != "" || len(rec.reqs) != 1 {
		t.Fatalf("env endpoint not used: %+v %v", s.Cloud, rec.reqs)
	}
}

func TestMetadataFailures(t *testing.T) {
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	t.Cleanup(slow.Close)
	notFound := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(notFound.Close)
	huge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(strings.Repeat("x", maxBody+10)))
	}))
	t.Cleanup(huge.Close)
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()

	tests := []struct {
		name, endpoint, want string
		dmi                  *snapshot.DMI
	}{
		{"timeout", slow.URL, "no answer within the timeout", azureDMI},
		{"404", notFound.URL, "HTTP 404", azureDMI},
		{"aws 404 on token", notFound.URL, "aws IMDSv2 token", awsDMI},
		{"gcp 404", notFound.URL, "HTTP 404", gcpDMI},
		{"oversized", huge.URL, "larger than", azureDMI},
		{"connection refused", closedURL, "metadata", azureDMI},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := withDMI(tt.dmi)
			start := time.Now()
			Collect(context.Background(), Options{Endpoint: tt.endpoint, Timeout: 200 * time.Millisecond}, s)
			if s.Cloud == nil || !strings.Contains(s.Cloud.MetadataError, tt.want) {
				t.Fatalf("cloud %+v, want metadata error containing %q", s.Cloud, tt.want)
			}
			if len(s.Manifest.Errors) != 1 || s.Manifest.Errors[0].Collector != "cloud.metadata" {
				t.Errorf("manifest errors %+v", s.Manifest.Errors)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("collection took %v despite a 200ms budget", d)
			}
		})
	}
}

func TestDetect(t *testing.T) {
	tests := []struct {
		d    *snapshot.DMI
		want string
	}{
		{nil, ""},
		{&snapshot.DMI{ChassisAssetTag: azureAssetTag}, "azure"},
		{&snapshot.DMI{SysVendor: "Microsoft Corporation", ProductName: "Virtual Machine"}, "azure"},
		{&snapshot.DMI{BIOSVendor: "Amazon EC2"}, "aws"},
		{&snapshot.DMI{SysVendor: "Xen", ProductVersion: "4.11.amazon"}, "aws"},
		{&snapshot.DMI{ProductName: "Google Compute Engine"}, "gcp"},
		{&snapshot.DMI{SysVendor: "QEMU"}, ""},
	}
	for _, tt := range tests {
		if got := Detect(tt.d); got != tt.want {
			t.Errorf("Detect(%+v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func FuzzParseAzure(f *testing.F) {
	f.Add([]byte(azureIMDS))
	f.Add([]byte(`{"compute":{"vmSize":"x","securityProfile":{"encryptionAtHost":1}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c := &snapshot.Cloud{}
		if err := parseAzure(b, c); err == nil && (c.Azure == nil || c.Azure.VMSize == "") {
			t.Fatalf("accepted %q without a vmSize", b)
		}
	})
}
