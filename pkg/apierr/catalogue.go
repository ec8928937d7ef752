// Package apierr is the one catalogue of API errors (spec part 7 plus the
// project's own) and their passage across gRPC: a service returns an *Error,
// which travels as a gRPC status carrying an apiv1.ErrorDetail, and the
// gateway renders it as {"error_code","error_name","message","detail"}.
package apierr

import "net/http"

// Def is one catalogue entry.
type Def struct {
	Code    int32
	Name    string
	Status  int
	Message string
}

// The project's own errors use the HTTP status as their code.
var (
	BadRequest         = Def{400, "BAD_REQUEST", http.StatusBadRequest, "bad request"}
	Unauthorized       = Def{401, "UNAUTHORIZED", http.StatusUnauthorized, "missing or unknown api key"}
	Forbidden          = Def{403, "FORBIDDEN", http.StatusForbidden, "forbidden"}
	NotFound           = Def{404, "NOT_FOUND", http.StatusNotFound, "not found"}
	Conflict           = Def{409, "CONFLICT", http.StatusConflict, "conflict"}
	PayloadTooLarge    = Def{413, "PAYLOAD_TOO_LARGE", http.StatusRequestEntityTooLarge, "request body is too large"}
	TooManyRequests    = Def{429, "TOO_MANY_REQUESTS", http.StatusTooManyRequests, "too many requests"}
	Internal           = Def{500, "INTERNAL_SERVER_ERROR", http.StatusInternalServerError, "internal server error"}
	ServiceUnavailable = Def{503, "SERVICE_UNAVAILABLE", http.StatusServiceUnavailable, "service unavailable"}
)

// Spec part 7. Statuses the spec leaves out are chosen by meaning (404 for
// "not found", 409 for state conflicts, 400 otherwise); codes it names
// without a number take free numbers in their family.
var (
	RequestValidation = Def{1, "REQUEST_VALIDATION_ERROR", 422, "request validation error"}

	ContactNotFound           = Def{1000, "CONTACT_NOT_FOUND", 404, "contact not found"}
	ContactPhoneEmailConflict = Def{1001, "CONTACT_PHONE_EMAIL_CONFLICT", 409, "phone or email already used by another contact"}
	ContactTagNotExists       = Def{1002, "CONTACT_TAG_NOT_EXISTS", 400, "tag does not exist"}
	NoteNotFound              = Def{2000, "NOTE_NOT_FOUND", 404, "note not found"}
	CompanyNotFound           = Def{8000, "COMPANY_NOT_FOUND", 404, "company not found"}

	ConnectionNotFound                    = Def{10000, "CONNECTION_NOT_FOUND", 404, "connection not found"}
	ConnectionBlacklistAlreadyListed      = Def{10007, "CONNECTION_BLACKLIST_CHAT_IS_ALREADY_BLACKLISTED", 409, "chat is already blacklisted"}
	ConnectionBlacklistNotListed          = Def{10008, "CONNECTION_BLACKLIST_CHAT_IS_NOT_BLACKLISTED", 404, "chat is not blacklisted"}
	ConnectionBlacklistLimitExceeded      = Def{10009, "CONNECTION_BLACKLIST_LIMIT_EXCEEDED", 409, "blacklist limit exceeded"}
	ConnectionLimitExceeded               = Def{10010, "CONNECTION_LIMIT_EXCEEDED", 400, "connection limit exceeded"}
	ConnectionBlacklistExpectedChatID     = Def{10015, "CONNECTION_BLACKLIST_CHAT_EXPECTED_CHAT_ID", 422, "this connection type blocks by chat_id only"}
	ConnectionIncorrectVKGroupScopes      = Def{10016, "CONNECTION_INCORRECT_VK_GROUP_SCOPES", 400, "incorrect vk community scopes"}
	ConnectionWhatsappProviderUnsupported = Def{10020, "CONNECTION_WHATSAPP_PROVIDER_UNSUPPORTED", 500, "whatsapp provider is not supported; contact support"}
	// Our numbers (spec-gaps: free numbers in the family, status by meaning).
	ConnectionWhatsappAlreadyAuthorized = Def{10021, "CONNECTION_WHATSAPP_ALREADY_AUTHORIZED", 409, "whatsapp connection is already authorised"}
	ConnectionWhatsappNoPendingLogin    = Def{10022, "CONNECTION_WHATSAPP_NO_PENDING_LOGIN", 409, "whatsapp connection has no pending login, or it expired"}

	IntegrationCRMResponsibleUserNotFound = Def{13007, "INTEGRATION_CRM_RESPONSIBLE_USER_NOT_FOUND", 400, "responsible user not found in the crm account"}

	MessagingChatNotFound         = Def{15000, "MESSAGING_CHAT_NOT_FOUND", 404, "chat not found"}
	MessagingTemplateNotFound     = Def{15005, "MESSAGING_TEMPLATE_NOT_FOUND", 404, "template not found"}
	MessagingWabaTemplateNotFound = Def{15010, "MESSAGING_WABA_TEMPLATE_NOT_FOUND", 400, "business template not found"}
	MessagingFileURLNotSupported  = Def{15011, "MESSAGING_FILE_URL_NOT_SUPPORTED", 400, "file url is not supported"}
	// The codes design/messaging.md adds to the family.
	MessagingWabaDialogSessionClosed = Def{15012, "MESSAGING_WABA_DIALOG_SESSION_CLOSED", 400, "the business dialog session is closed: send a template"}
	MessagingIdempotencyKeyReused    = Def{15014, "MESSAGING_IDEMPOTENCY_KEY_REUSED", 409, "the idempotency key was used for another request"}

	TelegramGenericError    = Def{17000, "TELEGRAM_GENERIC_ERROR", 400, "telegram session expired or invalid"}
	TelegramSessionNotFound = Def{17001, "TELEGRAM_SESSION_NOT_FOUND", 404, "telegram login session not found or expired"}
	TelegramInvalidCode     = Def{17002, "TELEGRAM_INVALID_CODE", 400, "telegram login code is invalid"}
	TelegramInvalidPassword = Def{17003, "TELEGRAM_INVALID_PASSWORD", 400, "telegram two-step password is invalid"}

	InvoiceProviderError = Def{18003, "INVOICE_PROVIDER_ERROR", 400, "invoice provider error"}

	SubscriptionNotFound          = Def{22000, "SUBSCRIPTION_NOT_FOUND", 404, "subscription not found"}
	SubscriptionInTest            = Def{22015, "SUBSCRIPTION_IN_TEST", 409, "subscription is in its test period"}
	SubscriptionAdvanceNotAllowed = Def{22016, "SUBSCRIPTION_ADVANCE_NOT_ALLOWED", 400, "advance is not allowed"}
	SubscriptionAdvanceActive     = Def{22017, "SUBSCRIPTION_ADVANCE_ACTIVE", 409, "subscription has an active advance"}
	SubscriptionPaymentsLocked    = Def{22018, "SUBSCRIPTION_PAYMENTS_LOCKED", 400, "payments are locked"}
	SubscriptionSizeBelowCurrent  = Def{22019, "SUBSCRIPTION_SIZE_BELOW_CURRENT", 409, "the size is below the connections the subscription holds"}
	RequisiteNotFound             = Def{22020, "REQUISITE_NOT_FOUND", 404, "requisite not found"}
	InvoiceNotFound               = Def{22021, "INVOICE_NOT_FOUND", 404, "invoice not found"}
	InvoiceNotPayable             = Def{22022, "INVOICE_NOT_PAYABLE", 409, "the invoice is not new"}

	UserEmailAlreadyExists = Def{26001, "USER_EMAIL_ALREADY_EXISTS", 409, "a user with this email already exists"}
	UserNameInvalid        = Def{26002, "USER_NAME_INVALID", 400, "name contains forbidden characters"}

	WabaSettingsNotAvailable        = Def{29000, "WABA_SETTINGS_NOT_AVAILABLE", 400, "business profile settings are not available"}
	WabaProfilePictureURLNotAllowed = Def{29005, "WABA_PROFILE_PICTURE_URL_NOT_ALLOWED", 400, "profile picture url is not allowed"}
	WabaProfilePictureTooLarge      = Def{29006, "WABA_PROFILE_PICTURE_TOO_LARGE", 400, "profile picture is larger than 5 MB"}

	MaxPersonalGenericError       = Def{30000, "MAX_PERSONAL_GENERIC_ERROR", 400, "max session expired or invalid"}
	MaxPersonalSessionNotFound    = Def{30001, "MAX_PERSONAL_SESSION_NOT_FOUND", 404, "max login session not found or expired"}
	MaxPersonalInvalidCode        = Def{30002, "MAX_PERSONAL_INVALID_CODE", 400, "max login code is invalid"}
	MaxPersonalInvalidPassword    = Def{30003, "MAX_PERSONAL_INVALID_PASSWORD", 400, "max two-step password is invalid"}
	MaxPersonalUnableToGetQRLogin = Def{30006, "MAX_PERSONAL_UNABLE_TO_GET_QR_LOGIN", 400, "unable to get qr login"}

	PartnerPayoutInsufficientBalance   = Def{31000, "PARTNER_PAYOUT_INSUFFICIENT_BALANCE", 400, "balance is below the payout minimum"}
	PartnerPayoutLocked                = Def{31001, "PARTNER_PAYOUT_LOCKED", 409, "a payout is already in progress"}
	PartnerCompanyNotFound             = Def{31002, "PARTNER_COMPANY_NOT_FOUND", 404, "partner company not found"}
	PartnerCompanyIsReferral           = Def{31003, "PARTNER_COMPANY_IS_REFERRAL", 400, "the client is a referral: it manages its own account"}
	PartnerRequisiteNotFound           = Def{31004, "PARTNER_REQUISITE_NOT_FOUND", 404, "partner requisite not found"}
	PartnerRequisiteIncomplete         = Def{31005, "PARTNER_REQUISITE_INCOMPLETE", 400, "the requisite has no bic or current account"}
	PartnerPayoutNotFound              = Def{31006, "PARTNER_PAYOUT_NOT_FOUND", 404, "payout not found"}
	PartnerPayoutNotActive             = Def{31007, "PARTNER_PAYOUT_NOT_ACTIVE", 409, "the payout is not CREATED"}
	PartnerClientsDailyLimitExceeded   = Def{31008, "PARTNER_CLIENTS_DAILY_LIMIT_EXCEEDED", 400, "the daily limit of new clients is reached"}
	PartnerNotificationChannelNotFound = Def{31009, "PARTNER_NOTIFICATION_CHANNEL_NOT_FOUND", 404, "notification channel not found"}

	// vk_direct logins (spec-gaps: shaped like max_personal, own family).
	VKDirectGenericError    = Def{32000, "VK_DIRECT_GENERIC_ERROR", 400, "vk session expired or invalid"}
	VKDirectSessionNotFound = Def{32001, "VK_DIRECT_SESSION_NOT_FOUND", 404, "vk login session not found or expired"}
	VKDirectInvalidCode     = Def{32002, "VK_DIRECT_INVALID_CODE", 400, "vk login code is invalid"}
	VKDirectInvalidPassword = Def{32003, "VK_DIRECT_INVALID_PASSWORD", 400, "vk two-step password is invalid"}

	// design/webhooks.md.
	WebhookNotFound         = Def{33000, "WEBHOOK_NOT_FOUND", 404, "webhook not found"}
	WebhookDeliveryNotFound = Def{33001, "WEBHOOK_DELIVERY_NOT_FOUND", 404, "webhook delivery not found"}

	// Sales: products, catalogs, shops and their storefront.
	SalesProductNotFound               = Def{34000, "SALES_PRODUCT_NOT_FOUND", 404, "product not found"}
	SalesCatalogNotFound               = Def{34001, "SALES_CATALOG_NOT_FOUND", 404, "catalog not found"}
	SalesShopNotFound                  = Def{34002, "SALES_SHOP_NOT_FOUND", 404, "shop not found"}
	SalesProductSKUConflict            = Def{34003, "SALES_PRODUCT_SKU_CONFLICT", 409, "another product of the company has this sku"}
	SalesProductImageURLNotAllowed     = Def{34004, "SALES_PRODUCT_IMAGE_URL_NOT_ALLOWED", 400, "an image is neither an image file the company uploaded nor an https link"}
	SalesCatalogCurrencyMismatch       = Def{34005, "SALES_CATALOG_CURRENCY_MISMATCH", 409, "a product of the catalog has no price in the catalog's currency"}
	SalesCatalogProductsLimitExceeded  = Def{34006, "SALES_CATALOG_PRODUCTS_LIMIT_EXCEEDED", 409, "the catalog's limit of products is reached"}
	SalesCatalogsLimitExceeded         = Def{34007, "SALES_CATALOGS_LIMIT_EXCEEDED", 409, "the company's limit of catalogs is reached"}
	SalesCatalogInUse                  = Def{34008, "SALES_CATALOG_IN_USE", 409, "a shop uses the catalog"}
	SalesShopConnectionTypeUnsupported = Def{34009, "SALES_SHOP_CONNECTION_TYPE_NOT_SUPPORTED", 400, "a shop needs a telegram_bot or max_bot connection"}
	SalesShopConnectionTaken           = Def{34010, "SALES_SHOP_CONNECTION_TAKEN", 409, "the connection has a shop already"}
	SalesStorefrontUnauthorized        = Def{34011, "SALES_STOREFRONT_UNAUTHORIZED", 401, "the launch data is missing, malformed, not signed by the shop's bot or too old"}
	SalesOrderReplayed                 = Def{34012, "SALES_ORDER_REPLAYED", 409, "this launch data placed another order"}

	// The v1 management API's own codes.
	V1IntegrationNotFound   = Def{35000, "V1_INTEGRATION_NOT_FOUND", 404, "integration not found"}
	V1IntegrationNotWebhook = Def{35001, "V1_INTEGRATION_NOT_WEBHOOK", 400, "only webhook integrations have this action"}
	V1WebhookURLCheckFailed = Def{35002, "V1_WEBHOOK_URL_CHECK_FAILED", 400, "the webhook url did not answer the check with HTTP 200"}
	V1InstanceNotAuthorized = Def{35003, "V1_INSTANCE_NOT_AUTHORIZED", 409, "the instance needs a QR scan: read its status for the QR"}
)

// Catalogue lists every entry, for documentation and for the tests that keep
// codes unique.
func Catalogue() []Def {
	return []Def{
		BadRequest, Unauthorized, Forbidden, NotFound, Conflict, PayloadTooLarge, TooManyRequests, Internal, ServiceUnavailable,
		RequestValidation,
		ContactNotFound, ContactPhoneEmailConflict, ContactTagNotExists, NoteNotFound, CompanyNotFound,
		ConnectionNotFound, ConnectionBlacklistAlreadyListed, ConnectionBlacklistNotListed,
		ConnectionBlacklistLimitExceeded, ConnectionLimitExceeded, ConnectionBlacklistExpectedChatID,
		ConnectionIncorrectVKGroupScopes, ConnectionWhatsappProviderUnsupported,
		ConnectionWhatsappAlreadyAuthorized, ConnectionWhatsappNoPendingLogin,
		IntegrationCRMResponsibleUserNotFound,
		MessagingChatNotFound, MessagingTemplateNotFound, MessagingWabaTemplateNotFound, MessagingFileURLNotSupported,
		MessagingWabaDialogSessionClosed, MessagingIdempotencyKeyReused,
		TelegramGenericError, TelegramSessionNotFound, TelegramInvalidCode, TelegramInvalidPassword,
		InvoiceProviderError,
		SubscriptionNotFound, SubscriptionInTest, SubscriptionAdvanceNotAllowed, SubscriptionAdvanceActive, SubscriptionPaymentsLocked,
		SubscriptionSizeBelowCurrent, RequisiteNotFound, InvoiceNotFound, InvoiceNotPayable,
		UserEmailAlreadyExists, UserNameInvalid,
		WabaSettingsNotAvailable, WabaProfilePictureURLNotAllowed, WabaProfilePictureTooLarge,
		MaxPersonalGenericError, MaxPersonalSessionNotFound, MaxPersonalInvalidCode, MaxPersonalInvalidPassword,
		MaxPersonalUnableToGetQRLogin,
		PartnerPayoutInsufficientBalance, PartnerPayoutLocked, PartnerCompanyNotFound, PartnerCompanyIsReferral,
		PartnerRequisiteNotFound, PartnerRequisiteIncomplete, PartnerPayoutNotFound, PartnerPayoutNotActive,
		PartnerClientsDailyLimitExceeded, PartnerNotificationChannelNotFound,
		SalesProductNotFound, SalesCatalogNotFound, SalesShopNotFound, SalesProductSKUConflict,
		SalesProductImageURLNotAllowed, SalesCatalogCurrencyMismatch, SalesCatalogProductsLimitExceeded,
		SalesCatalogsLimitExceeded, SalesCatalogInUse, SalesShopConnectionTypeUnsupported,
		SalesShopConnectionTaken, SalesStorefrontUnauthorized, SalesOrderReplayed,
		VKDirectGenericError, VKDirectSessionNotFound, VKDirectInvalidCode, VKDirectInvalidPassword,
		WebhookNotFound, WebhookDeliveryNotFound,
		V1IntegrationNotFound, V1IntegrationNotWebhook, V1WebhookURLCheckFailed, V1InstanceNotAuthorized,
	}
}

// ByCode finds a catalogue entry.
func ByCode(code int32) (Def, bool) {
	for _, d := range Catalogue() {
		if d.Code == code {
			return d, true
		}
	}
	return Def{}, false
}
