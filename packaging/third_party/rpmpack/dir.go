// Copyright 2019 Google LLC
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//      http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

package rpmpack

// dirIndex holds the index from files to directory names.
type dirIndex struct {
	m map[string]uint32
	l []string
}

func newDirIndex() *dirIndex {
	return &dirIndex{m: make(map[string]uint32)}
}

func (d *dirIndex) Get(value string) uint32 {

	if idx, ok := d.m[value]; ok {
		return idx
	}
	newIdx := uint32(len(d.l))
	d.l = append(d.l, value)

	d.m[value] = newIdx
	return newIdx
}

func (d *dirIndex) AllDirs() []string {
	return d.l
}
