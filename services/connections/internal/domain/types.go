// Package domain holds the connections service's entities and rules. It
// imports neither gRPC nor pgx.
package domain

import "errors"

// ErrNotFound is a repository miss; the app maps it to the API error.
var ErrNotFound = errors.New("not found")

// Type is a connection type as written in JSON ("whatsapp", "tinkoff").
type Type string

// Messenger types (spec 1).
const (
	Whatsapp      Type = "whatsapp"
	Waba          Type = "waba"
	Telegram      Type = "telegram"
	TelegramBot   Type = "telegram_bot"
	MaxPersonal   Type = "max_personal"
	MaxBot        Type = "max_bot"
	VKGroup       Type = "vk_group"
	VKDirect      Type = "vk_direct"
	Odnoklassniki Type = "odnoklassniki"
	Avito         Type = "avito"
)

// Payment terminal types (the limit names of spec 8).
const (
	Tinkoff      Type = "tinkoff"
	Modulbank    Type = "modulbank"
	Sberbank     Type = "sberbank"
	Paykeeper    Type = "paykeeper"
	Bepaid       Type = "bepaid"
	Payselection Type = "payselection"
	Yookassa     Type = "yookassa"
	Robokassa    Type = "robokassa"
	Keepz        Type = "keepz"
)

// CRM types, created and changed by the service only.
const (
	AmoCRM   Type = "amocrm"
	Bitrix24 Type = "bitrix24"
)

// StatusType and StatusSubtype are a connection status (spec 2.2).
type StatusType string

const (
	Good StatusType = "good"
	Bad  StatusType = "bad"
)

type StatusSubtype string

const (
	Normal                    StatusSubtype = "normal"
	WhatsappQRNotScanned      StatusSubtype = "whatsapp_qr_not_scanned"
	GenericAuthorizationError StatusSubtype = "generic_authorization_error"
	GenericConnectionError    StatusSubtype = "generic_connection_error"
)

// Status is a last_status value.
type Status struct {
	Type    StatusType
	Subtype StatusSubtype
}

// MessengerAccount is the account a login session authenticated: what a
// telegram, max_personal or vk_direct connection is made from.
type MessengerAccount struct {
	UserID   string
	Username *string
	// E.164, with the leading +.
	Phone string
	Name  *string
}
