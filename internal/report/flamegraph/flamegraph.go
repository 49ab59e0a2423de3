// Package flamegraph renders folded stacks as a flame graph SVG, in the
// layout of Brendan Gregg's flamegraph.pl: the root at the bottom, one
// row per stack depth, each frame as wide as the samples that passed
// through it, siblings in alphabetical order. It replaces the perl
// pipeline (stackcollapse-perf.pl | flamegraph.pl) with deterministic Go:
// the same stacks always give the same bytes, so outputs are golden-tested.
package flamegraph

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/slowpath/slowpath/internal/units"
)

// Stack is one folded stack, frames from the root outwards.
type Stack struct {
	Frames []string
	Count  uint64
}

// Options shape the picture. Zero values take defaults.
type Options struct {
	Title      string  // default "Flame Graph"
	Width      float64 // pixels, default 1200
	FrameH     float64 // pixels per row, default 16
	MinWidth   float64 // frames narrower than this (pixels) are left out, default 0.1
	CountName  string  // unit in tooltips, default "samples"
	FontSize   float64 // default 12
	RootName   string  // default "all"
	FontFamily string  // default Verdana
}

func (o *Options) defaults() {
	if o.Title == "" {
		o.Title = "Flame Graph"
	}
	if o.Width <= 0 {
		o.Width = 1200
	}
	if o.FrameH <= 0 {
		o.FrameH = 16
	}
	if o.MinWidth <= 0 {
		o.MinWidth = 0.1
	}
	if o.CountName == "" {
		o.CountName = "samples"
	}
	if o.FontSize <= 0 {
		o.FontSize = 12
	}
	if o.RootName == "" {
		o.RootName = "all"
	}
	if o.FontFamily == "" {
		o.FontFamily = "Verdana"
	}
}

type node struct {
	name     string
	count    uint64
	children map[string]*node
}

func (n *node) child(name string) *node {
	if n.children == nil {
		n.children = map[string]*node{}
	}
	c := n.children[name]
	if c == nil {
		c = &node{name: name}
		n.children[name] = c
	}
	return c
}

func (n *node) sorted() []*node {
	out := make([]*node, 0, len(n.children))
	for _, c := range n.children {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b *node) int { return cmp.Compare(a.name, b.name) })
	return out
}

func depth(n *node) int {
	d := 0
	for _, c := range n.children {
		d = max(d, depth(c))
	}
	return d + 1
}

// Margins, as in flamegraph.pl.
const (
	padTop    = 34.0
	padBottom = 10.0
	padSide   = 10.0
	charWidth = 0.59 // average glyph width relative to the font size
)

// Render writes an SVG flame graph of stacks to w. Stacks with no frames
// count toward the root only. Characters XML cannot carry are shown as
// U+FFFD (see xmlText); it returns how many distinct names of drawn frames
// had some replaced, and the picture says so in a note under the title.
func Render(w io.Writer, stacks []Stack, o Options) (replaced int, err error) {
	o.defaults()
	root := &node{name: o.RootName}
	for _, s := range stacks {
		if root.count+s.Count < root.count {
			return 0, errors.New("flame graph: total count overflows uint64")
		}
		root.count += s.Count
		n := root
		for _, f := range s.Frames {
			n = n.child(f)
			n.count += s.Count
		}
	}
	var scale float64
	if root.count > 0 {
		scale = (o.Width - 2*padSide) / float64(root.count)
	}
	// A frame is drawn when it is at least MinWidth wide; its children
	// are never wider, so a frame left out takes its subtree with it.
	drawn := func(n *node) bool { return root.count > 0 && float64(n.count)*scale >= o.MinWidth }
	bad := map[string]bool{}
	var find func(n *node)
	find = func(n *node) {
		for _, c := range n.children {
			if drawn(c) {
				if _, ok := xmlText(c.name); !ok {
					bad[c.name] = true
				}
				find(c)
			}
		}
	}
	find(root)
	replaced = len(bad)
	// The note takes a line of its own between the title and the frames.
	top := padTop
	if replaced > 0 {
		top += o.FontSize + 4
	}
	rows := depth(root)
	height := top + float64(rows)*o.FrameH + padBottom
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, `<?xml version="1.0" standalone="no"?>
<svg version="1.1" width="%s" height="%s" viewBox="0 0 %s %s" xmlns="http://www.w3.org/2000/svg">
<style>text { font-family: %s; font-size: %spx; fill: rgb(0,0,0); } .title { font-size: %spx; }</style>
<rect x="0" y="0" width="%s" height="%s" fill="rgb(248,248,248)"/>
<text class="title" x="%s" y="%s" text-anchor="middle">%s</text>
`, num(o.Width), num(height), num(o.Width), num(height), escape(o.FontFamily), num(o.FontSize), num(o.FontSize+5),
		num(o.Width), num(height), num(o.Width/2), num(o.FontSize*2), escape(o.Title))
	if replaced > 0 {
		fmt.Fprintf(bw, `<text class="note" x="%s" y="%s" text-anchor="middle">%s held characters XML cannot carry (control characters, U+FFFE, U+FFFF or invalid UTF-8), shown as U+FFFD (%s)</text>
`, num(o.Width/2), num(o.FontSize*3+4), units.Plural(replaced, "frame name"), string(utf8.RuneError))
	}
	if root.count == 0 {
		fmt.Fprintf(bw, `<text x="%s" y="%s" text-anchor="middle">no %s</text>
`, num(o.Width/2), num(top+o.FrameH), escape(o.CountName))
	} else {
		var draw func(n *node, x float64, level int)
		draw = func(n *node, x float64, level int) {
			if !drawn(n) {
				return
			}
			wpx := float64(n.count) * scale
			y := height - padBottom - float64(level+1)*o.FrameH
			pct := float64(n.count) * 100 / float64(root.count)
			name, _ := xmlText(n.name)
			fmt.Fprintf(bw, `<g><title>%s (%d %s, %s%%)</title><rect x="%s" y="%s" width="%s" height="%s" fill="%s" rx="2" ry="2"/>`,
				escape(name), n.count, escape(o.CountName), num(pct), num(x), num(y), num(wpx), num(o.FrameH-1), colour(n.name, level))
			if label := fit(name, wpx, o.FontSize); label != "" {
				fmt.Fprintf(bw, `<text x="%s" y="%s">%s</text>`, num(x+3), num(y+o.FrameH-4.5), escape(label))
			}
			bw.WriteString("</g>\n")
			cx := x
			for _, c := range n.sorted() {
				draw(c, cx, level+1)
				cx += float64(c.count) * scale
			}
		}
		draw(root, padSide, 0)
	}
	bw.WriteString("</svg>\n")
	return replaced, bw.Flush()
}

// xmlText returns s with every character XML 1.0 does not allow replaced
// by U+FFFD, and whether s was already clean. The Char production
// (https://www.w3.org/TR/xml/#charsets) allows #x9, #xA, #xD,
// #x20-#xD7FF, #xE000-#xFFFD and #x10000-#x10FFFF: C0 controls, U+FFFE
// and U+FFFF are out, and so is a byte that is not UTF-8 (a lone
// surrogate's encoding is one). Kernel symbol names are ASCII, but
// folded files come from anywhere and one bad byte makes a viewer reject
// the whole picture.
func xmlText(s string) (string, bool) {
	clean := true
	for i, r := range s {
		if !xmlChar(r) || r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD") {
			clean = false
			break
		}
	}
	if clean {
		return s, true
	}
	var b strings.Builder
	for i, r := range s {
		if !xmlChar(r) || r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD") {
			r = utf8.RuneError
		}
		b.WriteRune(r)
	}
	return b.String(), false
}

func xmlChar(r rune) bool {
	return r == 0x9 || r == 0xA || r == 0xD ||
		0x20 <= r && r <= 0xD7FF || 0xE000 <= r && r <= 0xFFFD || 0x10000 <= r && r <= 0x10FFFF
}

// fit shortens a label to the frame width, or drops it when not even two
// characters fit (flamegraph.pl does the same).
func fit(s string, wpx, font float64) string {
	chars := int((wpx - 6) / (font * charWidth))
	if chars < 3 {
		return ""
	}
	r := []rune(s)
	if len(r) <= chars {
		return s
	}
	return string(r[:chars-2]) + ".."
}

// colour picks a warm colour from a hash of the name, so a function keeps
// its colour across graphs; the root and bracketed pseudo-frames are grey.
func colour(name string, level int) string {
	if level == 0 || strings.HasPrefix(name, "[") {
		return "rgb(200,200,200)"
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	v := h.Sum32()
	r := 205 + int(v%50)
	g := int((v >> 8) % 230)
	b := int((v >> 16) % 55)
	if level == 1 {
		// The first row holds drop reasons: cooler, to set them apart.
		return fmt.Sprintf("rgb(%d,%d,%d)", b+60, g/2+100, r)
	}
	return fmt.Sprintf("rgb(%d,%d,%d)", r, g, b)
}

// num formats a coordinate with at most two decimals: enough for pixels,
// and short.
func num(f float64) string {
	return strconv.FormatFloat(math.Round(f*100)/100, 'f', -1, 64)
}

// escaper also writes CR as a reference: a parser turns a literal CR in
// text into LF (XML 1.0 section 2.11), and a frame name may hold one.
var escaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#39;", "\r", "&#13;")

// escape makes s safe as XML character data: characters XML forbids
// become U+FFFD and markup characters references.
func escape(s string) string {
	s, _ = xmlText(s)
	return escaper.Replace(s)
}
