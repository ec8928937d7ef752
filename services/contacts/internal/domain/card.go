package domain

// Card is what other services show of a contact in their lists.
type Card struct {
	ID      int64
	Name    string
	IsGroup bool
	// AvatarURL: contacts keep no avatar yet; always nil today.
	AvatarURL *string
}
