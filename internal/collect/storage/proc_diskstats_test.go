package storage

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/snapshot"
)

func TestParseDiskstats(t *testing.T) {
	const linux66 = ` 259       0 nvme0n1 1000 2 8000 500 900 3 7200 450 0 1200 950 0 0 0 0 10 4
 259       1 nvme0n1p1 10 0 80 5 9 0 72 4 0 12 9 0 0 0 0 0 0
 253       0 dm-0 1 0 8 1 1 0 8 1 0 2 2 0 0 0 0 0 0
`
	nvme := &snapshot.BlockStat{Fields: 17, ReadIOs: 1000, ReadMerges: 2, ReadSectors: 8000, ReadTicksMS: 500,
		WriteIOs: 900, WriteMerges: 3, WriteSectors: 7200, WriteTicksMS: 450, IOTicksMS: 1200, TimeInQueueMS: 950, FlushIOs: 10, FlushTicksMS: 4}
	for _, tt := range []struct {
		name    string
		in      string
		want    map[string]bool
		out     map[string]*snapshot.BlockStat
		wantErr bool
	}{
		{name: "wanted only", in: linux66, want: map[string]bool{"nvme0n1": true, "sdz": true}, out: map[string]*snapshot.BlockStat{"nvme0n1": nvme}},
		{name: "all", in: linux66, out: map[string]*snapshot.BlockStat{"nvme0n1": nvme,
			"nvme0n1p1": {Fields: 17, ReadIOs: 10, ReadSectors: 80, ReadTicksMS: 5, WriteIOs: 9, WriteSectors: 72, WriteTicksMS: 4, IOTicksMS: 12, TimeInQueueMS: 9},
			"dm-0":      {Fields: 17, ReadIOs: 1, ReadSectors: 8, ReadTicksMS: 1, WriteIOs: 1, WriteSectors: 8, WriteTicksMS: 1, IOTicksMS: 2, TimeInQueueMS: 2}}},
		// Linux before 4.18: 11 counters.
		{name: "11 counters", in: "   8 0 sda 1 2 3 4 5 6 7 8 9 10 11\n", out: map[string]*snapshot.BlockStat{"sda": {Fields: 11,
			ReadIOs: 1, ReadMerges: 2, ReadSectors: 3, ReadTicksMS: 4, WriteIOs: 5, WriteMerges: 6, WriteSectors: 7, WriteTicksMS: 8, InFlight: 9, IOTicksMS: 10, TimeInQueueMS: 11}}},
		{name: "empty", in: "", out: map[string]*snapshot.BlockStat{}},
		{name: "no name", in: "8 0\n", wantErr: true},
		{name: "short counters", in: "8 0 sda 1 2 3\n", wantErr: true},
		{name: "not a number", in: "8 0 sda 1 2 3 4 5 6 7 8 9 10 x\n", wantErr: true},
		// A line not wanted is not parsed, so not refused either.
		{name: "bad line not wanted", in: "8 0 sda 1 2 3\n", want: map[string]bool{"sdb": true}, out: map[string]*snapshot.BlockStat{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseDiskstats([]byte(tt.in), tt.want)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil {
				if !errors.Is(err, errBlockStat) {
					t.Errorf("error %v does not wrap errBlockStat", err)
				}
				return
			}
			if diff := cmp.Diff(tt.out, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzParseDiskstats(f *testing.F) {
	f.Add([]byte(" 259 0 nvme0n1 1000 2 8000 500 900 3 7200 450 0 1200 950 0 0 0 0 10 4\n"))
	f.Add([]byte("8 0 sda 1 2 3\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := parseDiskstats(in, nil)
		if err != nil {
			if !errors.Is(err, errBlockStat) && got != nil {
				t.Fatalf("error %v with a result", err)
			}
			return
		}
		for name, st := range got {
			if st == nil || st.Fields < 11 {
				t.Fatalf("%s: %+v without an error", name, st)
			}
		}
	})
}
