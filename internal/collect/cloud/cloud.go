// Package cloud detects the cloud from DMI and reads instance metadata.
//
// Metadata is fetched only when DMI (already in the snapshot's host section)
// names a cloud or --cloud names one; --cloud none disables it. Requests go
// straight to the endpoint (never through a proxy) with a 1 s budget in total.
// Failures are recorded in Cloud.MetadataError and the manifest, never fatal.
package cloud

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/slowpath/slowpath/internal/snapshot"
)

// EnvEndpoint overrides the metadata endpoint, like --metadata-endpoint.
const EnvEndpoint = "SLOWPATH_METADATA_ENDPOINT"

// DefaultTimeout bounds all metadata requests of one collection together.
const DefaultTimeout = time.Second

// Default endpoints. Azure and AWS serve instance metadata on the link-local
// address; GCE documents metadata.google.internal (which resolves to the same).
const (
	linkLocal   = "http://169.254.169.254"
	gcpEndpoint = "http://metadata.google.internal"
)

// azureAssetTag is the DMI chassis asset tag every Azure VM carries
// (https://learn.microsoft.com/troubleshoot/azure/virtual-machines/linux/linux-azure-guest-detect).
const azureAssetTag = "7783-7084-3265-9085-8269-3286-77"

// Options configure metadata access.
type Options struct {
	// Cloud is "" or "auto" (detect from DMI), azure, aws, gcp, or none.
	Cloud string
	// Endpoint replaces the provider's metadata base URL (scheme://host[:port]).
	Endpoint string
	// Timeout bounds all requests together; DefaultTimeout when zero.
	Timeout time.Duration
	// Client is used for requests; a proxy-free client when nil.
	Client *http.Client
	// NotLive, when set, keeps metadata from being fetched and says why:
	// instance metadata answers for the VM slowpath runs on, not for a
	// tree from another host (hostfs.FS.NotLive). The provider is still
	// detected from the tree's DMI.
	NotLive error
}

// AddFlags registers the metadata flags on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Cloud, "cloud", "auto", "cloud to read instance metadata from: auto (from DMI), azure, aws, gcp or none")
	fs.StringVar(&o.Endpoint, "metadata-endpoint", "", "instance metadata base `URL` (default: the provider's; env "+EnvEndpoint+")")
}

// Validate checks the flag values before anything is collected, so a typo
// is a usage error rather than a line in the manifest.
func (o Options) Validate() error {
	switch o.Cloud {
	case "", "auto", "none", "azure", "aws", "gcp":
	default:
		return fmt.Errorf("unknown --cloud %q: use auto, azure, aws, gcp or none", o.Cloud)
	}
	if o.Endpoint != "" {
		u, err := neturl.Parse(o.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--metadata-endpoint %q: want a base URL such as http://127.0.0.1:8080", o.Endpoint)
		}
	}
	return nil
}

// Detect names the cloud DMI identifies, "" when none.
func Detect(d *snapshot.DMI) string {
	if d == nil {
		return ""
	}
	switch {
	case d.ChassisAssetTag == azureAssetTag,
		d.SysVendor == "Microsoft Corporation" && d.ProductName == "Virtual Machine":
		return "azure"
	case d.SysVendor == "Amazon EC2", d.BIOSVendor == "Amazon EC2", d.BoardVendor == "Amazon EC2",
		strings.Contains(strings.ToLower(d.ProductVersion), "amazon"):
		return "aws"
	case d.SysVendor == "Google", d.BIOSVendor == "Google", d.ProductName == "Google Compute Engine":
		return "gcp"
	}
	return ""
}

// Collect fills s.Cloud. It reads s.Host.DMI, so it runs after the host collector.
func Collect(ctx context.Context, o Options, s *snapshot.Snapshot) {
	var dmi *snapshot.DMI
	if s.Host != nil {
		dmi = s.Host.DMI
	}
	provider, by := "", ""
	switch o.Cloud {
	case "", "auto":
		if provider = Detect(dmi); provider != "" {
			by = "dmi"
		}
	case "none":
		return
	case "azure", "aws", "gcp":
		provider, by = o.Cloud, "flag"
	default:
		s.AddError("cloud", "--cloud", fmt.Errorf("unknown cloud %q: use auto, azure, aws, gcp or none", o.Cloud))
		return
	}
	if provider == "" {
		return
	}
	c := &snapshot.Cloud{Provider: provider, DetectedBy: by}
	s.Cloud = c
	if o.NotLive != nil {
		c.MetadataError = o.NotLive.Error()
		s.AddError("cloud.metadata", "instance metadata", o.NotLive)
		return
	}

	endpoint := o.Endpoint
	if endpoint == "" {
		endpoint = os.Getenv(EnvEndpoint)
	}
	if endpoint == "" {
		endpoint = linkLocal
		if provider == "gcp" {
			endpoint = gcpEndpoint
		}
	}
	endpoint = strings.TrimRight(endpoint, "/")
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	f := &fetcher{base: endpoint, client: o.Client}
	if f.client == nil {
		f.client = &http.Client{Transport: &http.Transport{
			Proxy:       nil, // metadata must never go through a proxy
			DialContext: (&net.Dialer{Timeout: timeout}).DialContext,
		}}
	}
	var err error
	switch provider {
	case "azure":
		err = fetchAzure(ctx, f, c)
	case "aws":
		err = fetchAWS(ctx, f, c)
	case "gcp":
		err = fetchGCP(ctx, f, c)
	}
	if err != nil {
		c.MetadataError = err.Error()
		s.AddError("cloud.metadata", f.last, err)
	}
}

// fetcher does the HTTP part; last is the URL of the latest request, for errors.
type fetcher struct {
	base   string
	client *http.Client
	last   string
}

// maxBody bounds a metadata answer; real ones are a few KiB.
const maxBody = 1 << 20

func (f *fetcher) do(ctx context.Context, method, path string, header map[string]string) ([]byte, error) {
	url := f.base + path
	f.last = url
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return nil, fmt.Errorf("metadata request %s: %w", url, err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := f.client.Do(req)
	if err != nil {
		// *url.Error repeats the method and URL; keep the cause.
		var ue *neturl.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("metadata %s: no answer within the timeout (not on this cloud, or metadata blocked): %w", url, err)
		}
		return nil, fmt.Errorf("metadata %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return nil, fmt.Errorf("metadata %s: read: %w", url, err)
	}
	if len(body) > maxBody {
		return nil, fmt.Errorf("metadata %s: answer larger than %d bytes", url, maxBody)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("metadata %s: HTTP %d", url, resp.StatusCode)
	}
	return body, nil
}
