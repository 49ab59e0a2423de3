package storagemodel

import "github.com/slowpath/slowpath/internal/pathrecord"

// Record is p as the files slowpath writes keep it. Crypt, InferredCrypt,
// EngineProcess and DiskIdentity convert as types, so a field added to one of them here
// fails to compile until the record has it; Path, Layer and CloudDisk are
// copied field by field, held to the record by TestRecordHasEveryField.
func (p *Path) Record() *pathrecord.Path {
	if p == nil {
		return nil
	}
	r := &pathrecord.Path{
		MountPoint: p.MountPoint, Device: p.Device, AlsoMountedAt: p.AlsoMountedAt,
		EncryptionLayers: p.EncryptionLayers, UnknownEncryptionLayers: p.UnknownEncryptionLayers,
		Incomplete: p.Incomplete, Empty: p.Empty,
	}
	if p.Layers != nil {
		r.Layers = make([]pathrecord.Layer, len(p.Layers))
	}
	for i, l := range p.Layers {
		r.Layers[i] = pathrecord.Layer{
			Kind: l.Kind, Name: l.Name, Encrypted: l.Encrypted, EncryptedBy: l.EncryptedBy,
			EncryptionUnknown: l.EncryptionUnknown, Depth: l.Depth, Device: l.Device,
			MajorMinor: l.MajorMinor, SizeBytes: l.SizeBytes, FSType: l.FSType, Fscrypt: l.Fscrypt,
			DMUUID: l.DMUUID, DMTargets: l.DMTargets, LUKS: l.LUKS, BackingFile: l.BackingFile,
			DirectIO: l.DirectIO, MDLevel: l.MDLevel, Queue: l.Queue, Ident: l.Ident, Note: l.Note,
		}
		if l.Crypt != nil {
			c := pathrecord.Crypt(*l.Crypt)
			r.Layers[i].Crypt = &c
		}
		if l.InferredCrypt != nil {
			ic := pathrecord.InferredCrypt(*l.InferredCrypt)
			r.Layers[i].InferredCrypt = &ic
		}
		if l.Engines != nil {
			r.Layers[i].Engines = make([]pathrecord.EngineProcess, len(l.Engines))
			for j, e := range l.Engines {
				r.Layers[i].Engines[j] = pathrecord.EngineProcess(e)
			}
		}
		if c := l.Cloud; c != nil {
			r.Layers[i].Cloud = &pathrecord.CloudDisk{
				Provider: c.Provider, Role: c.Role, Encrypted: c.Encrypted, EncryptedBy: c.EncryptedBy,
				Algorithm: c.Algorithm, LocalSSD: c.LocalSSD, Fact: c.Fact, Source: c.Source, Note: c.Note,
			}
			if c.Identity != nil {
				id := pathrecord.DiskIdentity(*c.Identity)
				r.Layers[i].Cloud.Identity = &id
			}
		}
	}
	return r
}

// FromRecord is the model's path back from a record, for the model's
// questions about it (CryptSpan, EncryptionChain).
func FromRecord(r *pathrecord.Path) *Path {
	if r == nil {
		return nil
	}
	p := &Path{
		MountPoint: r.MountPoint, Device: r.Device, AlsoMountedAt: r.AlsoMountedAt,
		EncryptionLayers: r.EncryptionLayers, UnknownEncryptionLayers: r.UnknownEncryptionLayers,
		Incomplete: r.Incomplete, Empty: r.Empty,
	}
	if r.Layers != nil {
		p.Layers = make([]Layer, len(r.Layers))
	}
	for i, l := range r.Layers {
		p.Layers[i] = Layer{
			Kind: l.Kind, Name: l.Name, Encrypted: l.Encrypted, EncryptedBy: l.EncryptedBy,
			EncryptionUnknown: l.EncryptionUnknown, Depth: l.Depth, Device: l.Device,
			MajorMinor: l.MajorMinor, SizeBytes: l.SizeBytes, FSType: l.FSType, Fscrypt: l.Fscrypt,
			DMUUID: l.DMUUID, DMTargets: l.DMTargets, LUKS: l.LUKS, BackingFile: l.BackingFile,
			DirectIO: l.DirectIO, MDLevel: l.MDLevel, Queue: l.Queue, Ident: l.Ident, Note: l.Note,
		}
		if l.Crypt != nil {
			c := Crypt(*l.Crypt)
			p.Layers[i].Crypt = &c
		}
		if l.InferredCrypt != nil {
			ic := InferredCrypt(*l.InferredCrypt)
			p.Layers[i].InferredCrypt = &ic
		}
		if l.Engines != nil {
			p.Layers[i].Engines = make([]EngineProcess, len(l.Engines))
			for j, e := range l.Engines {
				p.Layers[i].Engines[j] = EngineProcess(e)
			}
		}
		if c := l.Cloud; c != nil {
			p.Layers[i].Cloud = &CloudDisk{
				Provider: c.Provider, Role: c.Role, Encrypted: c.Encrypted, EncryptedBy: c.EncryptedBy,
				Algorithm: c.Algorithm, LocalSSD: c.LocalSSD, Fact: c.Fact, Source: c.Source, Note: c.Note,
			}
			if c.Identity != nil {
				id := DiskIdentity(*c.Identity)
				p.Layers[i].Cloud.Identity = &id
			}
		}
	}
	return p
}
