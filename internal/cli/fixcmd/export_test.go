package fixcmd

// HTMLName exposes htmlName to the external tests.
var HTMLName = htmlName
