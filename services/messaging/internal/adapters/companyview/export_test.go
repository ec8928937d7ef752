package companyview

import "time"

// SetClock makes v judge paid periods at the times now answers.
func SetClock(v *View, now func() time.Time) { v.now = now }
