package analyze_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/analyze"
	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/collect/cloud"
	"github.com/slowpath/slowpath/internal/collect/storage"
	"github.com/slowpath/slowpath/internal/model/storagemodel"
	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/testing/hostfstest"
)

// gen2IMDS is the part of an IMDS /metadata/instance answer the collector
// reads, in the shape of Microsoft's sample response
// (learn.microsoft.com/azure/virtual-machines/instance-metadata-service):
// encryption at host on, resourceDisk.size 614400.
const gen2IMDS = `{"compute": {"location": "westeurope", "vmSize": "Standard_E16d_v5",
  "securityProfile": {"secureBootEnabled": "true", "virtualTpmEnabled": "true", "encryptionAtHost": "true"},
  "storageProfile": {"osDisk": {"diffDiskSettings": {"option": ""}, "diskSizeGB": "30"}, "resourceDisk": {"size": "614400"}}}}`

type notEncrypted struct{}

func (notEncrypted) Policy(string, uint64) (*snapshot.Fscrypt, error) { return nil, unix.ENODATA }

// TestCloudIdentityEndToEnd collects storage from an Azure Gen2 sysfs tree
// and instance metadata from a loopback IMDS fake, then runs doctor's
// analysis: the temp disk, whose size is not IMDS's, is found by its VMBus
// controller and LUN and double encryption is reported on it; the data
// disk whose size equals IMDS's is not taken for the temp disk.
func TestCloudIdentityEndToEnd(t *testing.T) {
	fs := hostfstest.Materialise(t, "testdata/azure-gen2-tree.txtar")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Metadata") != "true" || r.URL.Path != "/metadata/instance" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(gen2IMDS))
	}))
	defer srv.Close()

	s := &snapshot.Snapshot{Manifest: snapshot.Manifest{FormatVersion: snapshot.FormatVersion}}
	(&storage.Collector{FS: fs, Fscrypt: notEncrypted{}}).Collect(context.Background(), s)
	cloud.Collect(context.Background(), cloud.Options{Cloud: "azure", Endpoint: srv.URL}, s)
	if len(s.Manifest.Errors) != 0 {
		t.Fatalf("collection errors: %+v", s.Manifest.Errors)
	}
	r, err := analyze.Run(s, check.Config{})
	if err != nil {
		t.Fatal(err)
	}

	roles := map[string]string{}
	for _, p := range r.Storage {
		for _, l := range p.Layers {
			if l.Cloud != nil && l.Cloud.Identity != nil {
				roles[p.MountPoint] = l.Cloud.Identity.Role + " by " + l.Cloud.Identity.Rule
			}
		}
	}
	for mp, want := range map[string]string{
		"/":             storagemodel.RoleOSDisk + " by azure-scsi-vmbus",
		"/mnt/resource": storagemodel.RoleTempDisk + " by azure-scsi-vmbus",
		"/mnt/archive":  storagemodel.RoleDataDisk + " by azure-scsi-vmbus",
	} {
		if roles[mp] != want {
			t.Errorf("%s: identified as %q, want %q", mp, roles[mp], want)
		}
	}

	var stacked []string
	for _, f := range r.Findings {
		if f.ID == "storage.stacked-encryption" && f.Status == check.Fail {
			stacked = append(stacked, f.Subject)
			ev := ""
			for _, e := range f.Evidence {
				ev += e.Observed + "\n"
			}
			if !strings.Contains(ev, "LUN 1 (resource)") {
				t.Errorf("%s: evidence does not name the VMBus LUN rule:\n%s", f.Subject, ev)
			}
		}
	}
	if len(stacked) != 1 || stacked[0] != "/mnt/resource" {
		t.Errorf("stacked-encryption fired on %v, want [/mnt/resource] only", stacked)
	}
}
