package report

// VisibleLen lets the external tests measure lines the way the renderer does.
var VisibleLen = visibleLen
