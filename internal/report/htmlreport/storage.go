package htmlreport

import (
	"github.com/slowpath/slowpath/internal/model/storagemodel"
	"github.com/slowpath/slowpath/internal/report"
	"github.com/slowpath/slowpath/internal/report/htmlpage"
)

// Colours of the data-path diagram: encryption stands out, layers whose
// encryption cannot be known from inside the VM are greyed.
const (
	colorLayer     = "#3b78c2"
	colorEncrypted = "#d35400"
	colorUnknown   = "#9aa3ab"
)

type treeNode struct {
	Name      string         `json:"name"`
	Value     string         `json:"value,omitempty"`
	ItemStyle map[string]any `json:"itemStyle,omitempty"`
	Symbol    string         `json:"symbol,omitempty"`
	Size      int            `json:"symbolSize,omitempty"`
	Children  []*treeNode    `json:"children,omitempty"`
}

// layerNode labels a layer as the text report does, marking who encrypts.
func layerNode(l storagemodel.Layer) *treeNode {
	n := &treeNode{Name: report.LayerLine(l), ItemStyle: map[string]any{"color": colorLayer}, Size: 12}
	switch {
	case l.Encrypted:
		n.Name = "[encrypted by " + l.EncryptedBy + "] " + n.Name
		n.ItemStyle["color"] = colorEncrypted
		n.Symbol = "diamond"
		n.Size = 18
	case l.EncryptionUnknown:
		n.Name += " [" + report.UnknownMark(l) + "]"
		n.ItemStyle["color"] = colorUnknown
	}
	return n
}

// StoragePathChart draws one storage path (filesystem → layers → disk →
// cloud) as a tree: the model's layers are depth-first with Depth, so a
// stack of open nodes rebuilds the nesting.
func StoragePathChart(p storagemodel.Path) *htmlpage.Chart {
	var roots []*treeNode
	var stack []*treeNode
	maxDepth, leaves := 0, 0
	for i, l := range p.Layers {
		n := layerNode(l)
		if l.Depth > len(stack) {
			// A malformed depth jump: attach to the deepest open node.
			l.Depth = len(stack)
		}
		stack = stack[:l.Depth]
		if len(stack) == 0 {
			roots = append(roots, n)
		} else {
			parent := stack[len(stack)-1]
			parent.Children = append(parent.Children, n)
		}
		stack = append(stack, n)
		maxDepth = max(maxDepth, l.Depth)
		if i == len(p.Layers)-1 || p.Layers[i+1].Depth <= l.Depth {
			leaves++
		}
	}
	root := &treeNode{Name: p.Subject(), Children: roots, ItemStyle: map[string]any{"color": "#1d232a"}, Size: 10}
	if len(roots) == 1 {
		root = roots[0]
	}
	depth := maxDepth + 1
	if len(roots) > 1 {
		depth++
	}
	return &htmlpage.Chart{
		Height: 60 + 56*depth + 12*max(0, leaves-1),
		Option: map[string]any{
			"tooltip": map[string]any{"trigger": "item"},
			"series": []any{map[string]any{
				"type":              "tree",
				"orient":            "TB",
				"data":              []any{root},
				"top":               24,
				"bottom":            24,
				"left":              24,
				"right":             "72%",
				"symbolSize":        12,
				"expandAndCollapse": false,
				"initialTreeDepth":  -1,
				"label":             map[string]any{"position": "right", "verticalAlign": "middle", "align": "left", "fontSize": 12},
				"leaves":            map[string]any{"label": map[string]any{"position": "right", "align": "left"}},
				"lineStyle":         map[string]any{"width": 2},
			}},
		},
	}
}

// storageSection is the data paths of a doctor model, one diagram each, with
// the encryption count above it.
func storageBlocks(paths []storagemodel.Path) []htmlpage.Block {
	var out []htmlpage.Block
	shown := 0
	for _, p := range paths {
		if p.Empty || len(p.Layers) == 0 {
			continue
		}
		shown++
		line := p.Subject() + ": "
		switch {
		case p.EncryptionLayers == 1:
			line += "1 encryption layer"
		default:
			line += itoa(p.EncryptionLayers) + " encryption layers"
		}
		if p.UnknownEncryptionLayers > 0 {
			line += " (+" + itoa(p.UnknownEncryptionLayers) + " unknown from inside)"
		}
		for _, why := range p.Incomplete {
			line += "; incomplete: " + why
		}
		out = append(out, htmlpage.Block{Text: line}, htmlpage.Block{Chart: StoragePathChart(p)})
	}
	if shown == 0 {
		out = append(out, htmlpage.Block{Text: "No storage paths found."})
	}
	return out
}
