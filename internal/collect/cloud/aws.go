package cloud

import (
	"context"
	"fmt"
	"strings"

	"github.com/slowpath/slowpath/internal/snapshot"
)

// EC2 IMDSv2: a session token from PUT /latest/api/token, then GETs with it
// (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/configuring-instance-metadata-service.html).
const (
	awsTokenPath = "/latest/api/token"
	awsMetaPath  = "/latest/meta-data/"
	// awsTokenTTL is short: the token is used for a handful of requests.
	awsTokenTTL = "60"
)

func fetchAWS(ctx context.Context, f *fetcher, c *snapshot.Cloud) error {
	tok, err := f.do(ctx, "PUT", awsTokenPath, map[string]string{"X-aws-ec2-metadata-token-ttl-seconds": awsTokenTTL})
	if err != nil {
		return fmt.Errorf("aws IMDSv2 token: %w", err)
	}
	h := map[string]string{"X-aws-ec2-metadata-token": strings.TrimSpace(string(tok))}
	get := func(p string) (string, error) {
		b, err := f.do(ctx, "GET", awsMetaPath+p, h)
		return strings.TrimSpace(string(b)), err
	}
	a := &snapshot.AWSMeta{}
	c.AWS = a
	if a.InstanceType, err = get("instance-type"); err != nil {
		return err
	}
	if a.InstanceType == "" || strings.ContainsAny(a.InstanceType, " \n<{") {
		return fmt.Errorf("aws metadata: instance-type %q does not look like an instance type", a.InstanceType)
	}
	c.InstanceType = a.InstanceType
	if r, err := get("placement/region"); err == nil {
		c.Region = r
	}
	names, err := get("block-device-mapping/")
	if err != nil {
		return err
	}
	for _, n := range strings.Fields(names) {
		n = strings.TrimSuffix(n, "/")
		if n == "" || strings.ContainsAny(n, "/?#") {
			continue
		}
		dev, err := get("block-device-mapping/" + n)
		if err != nil {
			return err
		}
		if a.BlockDeviceMapping == nil {
			a.BlockDeviceMapping = map[string]string{}
		}
		a.BlockDeviceMapping[n] = dev
	}
	return nil
}
