package domain

// InstanceState is what the v1 instances API makes of a whatsapp
// connection's last status: the three rows of its status table.
type InstanceState int

const (
	// InstanceAuthorized: good/normal.
	InstanceAuthorized InstanceState = iota + 1
	// InstanceDropped: bad/generic_connection_error, a session another web
	// session took or the phone lost; takeover and reboot bring it back.
	InstanceDropped
	// InstanceNeedsQR: bad/whatsapp_qr_not_scanned or
	// bad/generic_authorization_error (or no status yet): only a scan
	// authorises it.
	InstanceNeedsQR
)

// StateOf is the instance state of a whatsapp connection's last status.
func StateOf(s *Status) InstanceState {
	switch {
	case s == nil:
		return InstanceNeedsQR
	case s.Type == Good:
		return InstanceAuthorized
	case s.Subtype == GenericConnectionError:
		return InstanceDropped
	}
	return InstanceNeedsQR
}
