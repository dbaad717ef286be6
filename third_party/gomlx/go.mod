module github.com/gomlx/gomlx

go 1.24.3

toolchain go1.24.6

require (
	github.com/MetalBlueberry/go-plotly v0.7.0
	github.com/charmbracelet/lipgloss v1.1.0
	github.com/daniellowtw/matlab v0.0.0-20190528220746-1ed1d96a6637
	github.com/disintegration/imaging v1.6.2
	github.com/dustin/go-humanize v1.0.1
	github.com/erkkah/margaid v0.3.0
	github.com/go-gota/gota v0.12.0
	github.com/gomlx/bsplines v0.2.0
	github.com/gomlx/go-xla v0.1.4
	github.com/google/uuid v1.6.0
	github.com/janpfeifer/gonb v0.11.1
	github.com/muesli/termenv v0.16.0
	github.com/pbnjay/memory v0.0.0-20210728143218-7b4eea64cf58
	github.com/pkg/errors v0.9.1
	github.com/schollz/progressbar/v3 v3.18.0
	github.com/stretchr/testify v1.11.1
	github.com/x448/float16 v0.8.4
	golang.org/x/exp v0.0.0-20250819193227-8b4c13bb791b
	gonum.org/v1/plot v0.15.2
	k8s.io/klog/v2 v2.130.1
)

require (
	github.com/aymanbagabas/go-udiff v0.3.1 // indirect
	github.com/charmbracelet/x/exp/golden v0.0.0-20241011142426-46044092ad91 // indirect
)

require (
	codeberg.org/go-fonts/liberation v0.5.0 // indirect
	codeberg.org/go-latex/latex v0.1.0 // indirect
	codeberg.org/go-pdf/fpdf v0.10.0 // indirect
	git.sr.ht/~sbinet/gg v0.6.0 // indirect
	github.com/ajstarks/svgo v0.0.0-20211024235047-1546f124cd8b // indirect
	github.com/aymanbagabas/go-osc52/v2 v2.0.1 // indirect
	github.com/campoy/embedmd v1.0.0 // indirect
	github.com/charmbracelet/colorprofile v0.3.0 // indirect
	github.com/charmbracelet/x/ansi v0.10.1 // indirect
	github.com/charmbracelet/x/cellbuf v0.0.13 // indirect
	github.com/charmbracelet/x/term v0.2.1 // indirect
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/dmarkham/enumer v1.6.1 // indirect
	github.com/go-logr/logr v1.4.3 // indirect
	github.com/gofrs/uuid v4.4.0+incompatible // indirect
	github.com/golang/freetype v0.0.0-20170609003504-e2365dfdc4a0 // indirect
	github.com/gomlx/exceptions v0.0.3 // indirect
	github.com/janpfeifer/must v0.2.0
	github.com/lucasb-eyer/go-colorful v1.2.0 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	github.com/mattn/go-runewidth v0.0.16 // indirect
	github.com/mitchellh/colorstring v0.0.0-20190213212951-d06e56a500db // indirect
	github.com/niemeyer/pretty v0.0.0-20200227124842-a10e7caefd8e // indirect
	github.com/pascaldekloe/name v1.0.0 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	github.com/rivo/uniseg v0.4.7 // indirect
	github.com/xo/terminfo v0.0.0-20220910002029-abceb7e1c41e // indirect
	golang.org/x/image v0.26.0 // indirect
	golang.org/x/mod v0.27.0 // indirect
	golang.org/x/net v0.43.0 // indirect
	golang.org/x/sync v0.16.0 // indirect
	golang.org/x/sys v0.39.0 // indirect
	golang.org/x/term v0.38.0 // indirect
	golang.org/x/text v0.28.0 // indirect
	golang.org/x/tools v0.36.0 // indirect
	gonum.org/v1/gonum v0.16.0 // indirect
	google.golang.org/protobuf v1.36.10 // indirect
	gopkg.in/check.v1 v1.0.0-20200227125254-8fa46927fb4f // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)

tool github.com/dmarkham/enumer
