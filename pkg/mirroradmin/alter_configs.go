package mirroradmin

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ResourceTypeMirror is the config resource type of a mirror's properties
// (kmirror's; Kafka assigns no resource type 64).
const ResourceTypeMirror kmsg.ConfigResourceType = 64

// AlterMirrorConfigs changes a mirror's source properties with
// IncrementalAlterConfigs on the MIRROR resource: kadm.SetConfig sets a
// property, kadm.DeleteConfig removes it (back to its default), and
// kadm.AppendConfig / kadm.SubtractConfig edit list properties such as
// bootstrap.servers. The properties the mirror ends up with are validated
// as CreateMirror's are (INVALID_CONFIG naming the property otherwise;
// RESOURCE_NOT_FOUND for an unknown mirror), all or nothing. The cluster's
// brokers reconnect to the source with the new properties at once: this is
// how a changed password or certificate is given to a mirror.
func (c *Client) AlterMirrorConfigs(ctx context.Context, mirror string, configs ...kadm.AlterConfig) error {
	if len(configs) == 0 {
		return fmt.Errorf("mirroradmin: no property to change")
	}
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = ResourceTypeMirror, mirror
	for _, ac := range configs {
		rc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		rc.Name, rc.Value = ac.Name, ac.Value
		switch ac.Op {
		case kadm.SetConfig:
			rc.Op = kmsg.IncrementalAlterConfigOpSet
		case kadm.DeleteConfig:
			rc.Op = kmsg.IncrementalAlterConfigOpDelete
		case kadm.AppendConfig:
			rc.Op = kmsg.IncrementalAlterConfigOpAppend
		case kadm.SubtractConfig:
			rc.Op = kmsg.IncrementalAlterConfigOpSubtract
		default:
			return fmt.Errorf("mirroradmin: unknown config operation %d for %s", ac.Op, ac.Name)
		}
		r.Configs = append(r.Configs, rc)
	}
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(ctx, c.cl)
	if err != nil {
		return err
	}
	for _, x := range resp.Resources {
		if err := errorFor(x.ErrorCode, x.ErrorMessage); err != nil {
			return err
		}
	}
	if len(resp.Resources) == 0 {
		return fmt.Errorf("mirroradmin: the cluster did not answer for mirror %q", mirror)
	}
	return nil
}
