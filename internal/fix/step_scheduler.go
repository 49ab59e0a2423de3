package fix

import (
	"fmt"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/quote"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// KindScheduler is the wire name of Scheduler.
const KindScheduler = "scheduler"

// Scheduler sets the I/O scheduler of a block device's queue
// (/sys/block/DEV/queue/scheduler).
type Scheduler check.SchedulerChange

func init() { registerKind[Scheduler]() }

func (Scheduler) Kind() string { return KindScheduler }

func (c Scheduler) StateKey() string { return "scheduler:" + c.Device }

func (c Scheduler) Command() string { return check.SchedulerCommand(c.Device, c.To) }

// NodeCommand sets it only on a node that has the device.
func (c Scheduler) NodeCommand() string {
	return fmt.Sprintf("if [ -e %s ]; then %s; fi", quote.Shell("/sys/block/"+c.Device+"/queue/scheduler"), c.Command())
}

func (c Scheduler) BlockDevice() string { return c.Device }

func (c Scheduler) Setting() string { return c.StateKey() + "=" + c.To }

func (c Scheduler) Want(string) string { return c.To }

func (Scheduler) Same(a, b string) bool { return a == b }

func (c Scheduler) Read(s Settings) (string, error) { return s.Scheduler(c.Device) }

func (c Scheduler) Write(s Settings, v string) error { return s.SetScheduler(c.Device, v) }

// ApplyTo sets the device's active scheduler in the snapshot.
func (c Scheduler) ApplyTo(s *snapshot.Snapshot) error {
	if s.Storage != nil {
		for i := range s.Storage.BlockDevices {
			if d := &s.Storage.BlockDevices[i]; d.Name == c.Device && d.Queue != nil {
				d.Queue.Scheduler = c.To
				return nil
			}
		}
	}
	return fmt.Errorf("scheduler of %s: the snapshot has no queue for that device", c.Device)
}
