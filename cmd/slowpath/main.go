// Command slowpath finds, proves and fixes the hidden costs that encryption at
// rest and kernel data-path defaults put on real workloads.
package main

import (
	"os"

	"github.com/slowpath/slowpath/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
