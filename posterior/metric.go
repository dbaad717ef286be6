package posterior

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// metric is the inverse metric M⁻¹ of the kinetic energy ½ pᵀM⁻¹p (Betancourt 2017, Sec. 4.2):
// diagonal, or dense with its Cholesky factor. A dense metric lets the sampler take long steps
// along a posterior whose parameters are correlated, where a diagonal one must step as short
// as the narrowest direction allows and needs deeper trees.
type metric struct {
	diag  []float64   // M⁻¹ when dense is nil
	dense [][]float64 // M⁻¹
	chol  [][]float64 // lower triangular L with M⁻¹ = L Lᵀ
	z     []float64   // scratch
}

// unitMetric returns the identity metric of the given dimension, dense or diagonal.
func unitMetric(dim int, dense bool) *metric {
	m := &metric{diag: make([]float64, dim), z: make([]float64, dim)}
	for i := range m.diag {
		m.diag[i] = 1
	}
	if dense {
		id := make([][]float64, dim)
		for i := range id {
			id[i] = make([]float64, dim)
			id[i][i] = 1
		}
		if err := m.setDense(id); err != nil {
			panic(err)
		}
	}
	return m
}

// setDense makes M⁻¹ = cov, a symmetric positive-definite matrix (kept, not copied).
func (m *metric) setDense(cov [][]float64) error {
	n := len(cov)
	l := make([][]float64, n)
	for i := range l {
		l[i] = make([]float64, n)
		for j := 0; j <= i; j++ {
			s := cov[i][j]
			for k := range j {
				s -= l[i][k] * l[j][k]
			}
			if i == j {
				if !(s > 0) || math.IsInf(s, 0) {
					return fmt.Errorf("metric adaptation: the covariance estimate is not positive definite")
				}
				l[i][i] = math.Sqrt(s)
			} else {
				l[i][j] = s / l[j][j]
			}
		}
	}
	m.dense, m.chol = cov, l
	for i := range m.diag {
		m.diag[i] = cov[i][i]
	}
	return nil
}

// set makes M⁻¹ a copy of cov, a symmetric positive-definite matrix of the metric's
// dimension: all of it if the metric is dense, else its diagonal.
func (m *metric) set(cov [][]float64) error {
	n := len(m.diag)
	if len(cov) != n {
		return fmt.Errorf("a %d×%d matrix for a metric of dimension %d", len(cov), len(cov), n)
	}
	c := make([][]float64, n)
	for i, row := range cov {
		if len(row) != n {
			return fmt.Errorf("row %d has %d entries for a metric of dimension %d", i, len(row), n)
		}
		if !(row[i] > 0) || math.IsInf(row[i], 0) {
			return fmt.Errorf("diagonal entry %d is %g: need a positive-definite matrix", i, row[i])
		}
		for j, v := range row {
			if math.IsNaN(v) || math.IsInf(v, 0) || v != cov[j][i] {
				return fmt.Errorf("entry (%d, %d) is %g: need a finite symmetric matrix", i, j, v)
			}
		}
		c[i] = append([]float64(nil), row...)
	}
	if m.dense == nil {
		for i := range m.diag {
			m.diag[i] = c[i][i]
		}
		return nil
	}
	return m.setDense(c)
}

// sharp sets dst = M⁻¹p.
func (m *metric) sharp(dst, p []float64) {
	if m.dense == nil {
		for i := range p {
			dst[i] = m.diag[i] * p[i]
		}
		return
	}
	for i, row := range m.dense {
		dst[i] = dot(row, p)
	}
}

// kinetic returns pᵀM⁻¹p, twice the kinetic energy.
func (m *metric) kinetic(p []float64) float64 {
	m.sharp(m.z, p)
	return dot(p, m.z)
}

// momentum draws p ~ normal(0, M): with M⁻¹ = L Lᵀ, p = L⁻ᵀz for z standard normal.
func (m *metric) momentum(rng *rand.Rand, p []float64) {
	if m.dense == nil {
		for i := range p {
			p[i] = rng.NormFloat64() / math.Sqrt(m.diag[i])
		}
		return
	}
	for i := range p {
		p[i] = rng.NormFloat64()
	}
	for i := len(p) - 1; i >= 0; i-- { // back substitution, Lᵀp = z
		s := p[i]
		for k := i + 1; k < len(p); k++ {
			s -= m.chol[k][i] * p[k]
		}
		p[i] = s / m.chol[i][i]
	}
}

// denseCopy returns a copy of M⁻¹ if it is dense, else nil.
func (m *metric) denseCopy() [][]float64 {
	if m.dense == nil {
		return nil
	}
	out := make([][]float64, len(m.dense))
	for i, row := range m.dense {
		out[i] = clone(row)
	}
	return out
}
