module github.com/nioc-gpu/nioc-gpu

go 1.26

require (
	github.com/dustin/go-humanize v1.0.1
	github.com/gomlx/gomlx v0.26.0
	github.com/pelletier/go-toml/v2 v2.4.3
	github.com/stretchr/testify v1.12.1
	github.com/viterin/vek v0.4.2
	golang.org/x/sys v0.39.0
	gonum.org/v1/gonum v0.17.0
	gonum.org/v1/plot v0.17.0
)

require (
	codeberg.org/go-fonts/liberation v0.5.0 // indirect
	codeberg.org/go-latex/latex v0.2.0 // indirect
	codeberg.org/go-pdf/fpdf v0.11.1 // indirect
	git.sr.ht/~sbinet/gg v0.7.0 // indirect
	github.com/ajstarks/svgo v0.0.0-20211024235047-1546f124cd8b // indirect
	github.com/chewxy/math32 v1.10.1 // indirect
	github.com/go-logr/logr v1.4.3 // indirect
	github.com/golang/freetype v0.0.0-20170609003504-e2365dfdc4a0 // indirect
	github.com/gomlx/go-xla v0.1.4 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/viterin/partial v1.1.0 // indirect
	github.com/x448/float16 v0.8.4 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/exp v0.0.0-20250819193227-8b4c13bb791b // indirect
	golang.org/x/image v0.30.0 // indirect
	golang.org/x/term v0.38.0 // indirect
	golang.org/x/text v0.28.0 // indirect
	google.golang.org/protobuf v1.36.10 // indirect
	k8s.io/klog/v2 v2.130.1 // indirect
)

replace github.com/gomlx/gomlx => ./third_party/gomlx

replace github.com/gomlx/go-xla => ./third_party/go-xla
