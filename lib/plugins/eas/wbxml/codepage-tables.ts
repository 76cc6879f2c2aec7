// The ActiveSync code pages 0–25 (MS-ASWBXML 2.1.2.1), every tag through protocol version 16.1.
//
// Each page lists its tags in runs: the key is the token of the first name of the run and the
// names that follow take the next tokens (so `0x05: 'Sync Responses'` is Sync = 0x05 and
// Responses = 0x06). Gaps in the token numbering start a new run. `legacy` holds the tags of
// protocol versions 2.5 and 12.0 that earlier revisions of MS-ASWBXML listed and the current one
// dropped: old clients still send some of them, and decoding them beats refusing the request.
// AirNotify (page 3) was only ever used by 2.5; its page is kept so the numbering stays whole.

/** One page as written here: number, name (the namespace without its colon), XML prefix, runs. */
export interface CodePageTable {
  readonly page: number;
  readonly name: string;
  readonly prefix: string;
  readonly runs: Readonly<Record<number, string>>;
  readonly legacy?: Readonly<Record<number, string>>;
}

export const CODE_PAGE_TABLES = [
  {
    page: 0,
    name: 'AirSync',
    prefix: 'airsync',
    runs: {
      0x05: 'Sync Responses Add Change Delete Fetch SyncKey ClientId ServerId Status Collection Class',
      0x12: 'CollectionId GetChanges MoreAvailable WindowSize Commands Options FilterType',
      0x1b: 'Conflict Collections ApplicationData DeletesAsMoves',
      0x20: 'Supported SoftDelete MIMESupport MIMETruncation Wait Limit Partial ConversationMode MaxItems HeartbeatInterval',
    },
    legacy: { 0x11: 'Version', 0x19: 'Truncation RTFTruncation', 0x1f: 'NotifyGUID' },
  },
  {
    page: 1,
    name: 'Contacts',
    prefix: 'contacts',
    runs: {
      0x05: 'Anniversary AssistantName AssistantPhoneNumber Birthday',
      0x0c:
        'Business2PhoneNumber BusinessAddressCity BusinessAddressCountry BusinessAddressPostalCode BusinessAddressState ' +
        'BusinessAddressStreet BusinessFaxNumber BusinessPhoneNumber CarPhoneNumber Categories Category Children Child ' +
        'CompanyName Department Email1Address Email2Address Email3Address FileAs FirstName Home2PhoneNumber ' +
        'HomeAddressCity HomeAddressCountry HomeAddressPostalCode HomeAddressState HomeAddressStreet HomeFaxNumber ' +
        'HomePhoneNumber JobTitle LastName MiddleName MobilePhoneNumber OfficeLocation OtherAddressCity ' +
        'OtherAddressCountry OtherAddressPostalCode OtherAddressState OtherAddressStreet PagerNumber RadioPhoneNumber ' +
        'Spouse Suffix Title WebPage YomiCompanyName YomiFirstName YomiLastName',
      0x3c: 'Picture Alias WeightedRank',
    },
    legacy: { 0x09: 'Body BodySize BodyTruncated', 0x3b: 'Rtf' },
  },
  {
    page: 2,
    name: 'Email',
    prefix: 'email',
    runs: {
      0x0f: 'DateReceived',
      0x11:
        'DisplayTo Importance MessageClass Subject Read To Cc From ReplyTo AllDayEvent Categories Category DtStamp ' +
        'EndTime InstanceType BusyStatus Location MeetingRequest Organizer RecurrenceId Reminder ResponseRequested ' +
        'Recurrences Recurrence Type Until Occurrences Interval DayOfWeek DayOfMonth WeekOfMonth MonthOfYear StartTime ' +
        'Sensitivity TimeZone GlobalObjId ThreadTopic',
      0x39: 'InternetCPID Flag FlagStatus ContentClass FlagType CompleteTime DisallowNewTimeProposal',
    },
    legacy: {
      0x05: 'Attachment Attachments AttName AttSize Att0Id AttMethod AttRemoved Body BodySize BodyTruncated',
      0x10: 'DisplayName',
      0x36: 'MIMEData MIMETruncated MIMESize',
    },
  },
  {
    page: 3,
    name: 'AirNotify',
    prefix: 'airnotify',
    runs: {},
    legacy: {
      0x05:
        'Notify Notification Version LifeTime DeviceInfo Enable Folder ServerEntryId DeviceAddress ValidCarrierProfiles ' +
        'CarrierProfile Status Replies Devices Device Id Expiry NotifyGUID DeviceFriendlyName',
    },
  },
  {
    page: 4,
    name: 'Calendar',
    prefix: 'calendar',
    runs: {
      0x05: 'Timezone AllDayEvent Attendees Attendee Email Name',
      0x0d: 'BusyStatus Categories Category',
      0x11:
        'DtStamp EndTime Exception Exceptions Deleted ExceptionStartTime Location MeetingStatus OrganizerEmail ' +
        'OrganizerName Recurrence Type Until Occurrences Interval DayOfWeek DayOfMonth WeekOfMonth MonthOfYear Reminder ' +
        'Sensitivity Subject StartTime UID AttendeeStatus AttendeeType',
      0x33:
        'DisallowNewTimeProposal ResponseRequested AppointmentReplyTime ResponseType CalendarType IsLeapMonth ' +
        'FirstDayOfWeek OnlineMeetingConfLink OnlineMeetingExternalLink ClientUid',
    },
    legacy: { 0x0b: 'Body BodyTruncated', 0x10: 'Rtf' },
  },
  {
    page: 5,
    name: 'Move',
    prefix: 'move',
    runs: { 0x05: 'MoveItems Move SrcMsgId SrcFldId DstFldId Response Status DstMsgId' },
  },
  {
    page: 6,
    name: 'GetItemEstimate',
    prefix: 'getitemestimate',
    runs: { 0x05: 'GetItemEstimate Version Collections Collection Class CollectionId DateTime Estimate Response Status' },
  },
  {
    page: 7,
    name: 'FolderHierarchy',
    prefix: 'folderhierarchy',
    runs: {
      0x07: 'DisplayName ServerId ParentId Type',
      0x0c: 'Status',
      0x0e: 'Changes Add Delete Update SyncKey FolderCreate FolderDelete FolderUpdate FolderSync Count',
    },
    legacy: { 0x05: 'Folders Folder', 0x0b: 'Response', 0x0d: 'ContentClass', 0x18: 'Version' },
  },
  {
    page: 8,
    name: 'MeetingResponse',
    prefix: 'meetingresponse',
    runs: {
      0x05: 'CalendarId CollectionId MeetingResponse RequestId Request Result Status UserResponse',
      0x0e: 'InstanceId',
      0x10: 'ProposedStartTime ProposedEndTime SendResponse',
    },
    legacy: { 0x0d: 'Version' },
  },
  {
    page: 9,
    name: 'Tasks',
    prefix: 'tasks',
    runs: {
      0x08:
        'Categories Category Complete DateCompleted DueDate UtcDueDate Importance Recurrence Type Start Until ' +
        'Occurrences Interval DayOfMonth DayOfWeek WeekOfMonth MonthOfYear Regenerate DeadOccur ReminderSet ' +
        'ReminderTime Sensitivity StartDate UtcStartDate Subject',
      0x22: 'OrdinalDate SubOrdinalDate CalendarType IsLeapMonth FirstDayOfWeek',
    },
    legacy: { 0x05: 'Body BodySize BodyTruncated', 0x21: 'CompressedRTF' },
  },
  {
    page: 10,
    name: 'ResolveRecipients',
    prefix: 'resolverecipients',
    runs: {
      0x05:
        'ResolveRecipients Response Status Type Recipient DisplayName EmailAddress Certificates Certificate ' +
        'MiniCertificate Options To CertificateRetrieval RecipientCount MaxCertificates MaxAmbiguousRecipients ' +
        'CertificateCount Availability StartTime EndTime MergedFreeBusy Picture MaxSize Data MaxPictures',
    },
  },
  {
    page: 11,
    name: 'ValidateCert',
    prefix: 'validatecert',
    runs: { 0x05: 'ValidateCert Certificates Certificate CertificateChain CheckCRL Status' },
  },
  {
    page: 12,
    name: 'Contacts2',
    prefix: 'contacts2',
    runs: {
      0x05: 'CustomerId GovernmentId IMAddress IMAddress2 IMAddress3 ManagerName CompanyMainPhone AccountName NickName MMS',
    },
  },
  {
    page: 13,
    name: 'Ping',
    prefix: 'ping',
    runs: { 0x05: 'Ping', 0x07: 'Status HeartbeatInterval Folders Folder Id Class MaxFolders' },
    legacy: { 0x06: 'AutdState' },
  },
  {
    page: 14,
    name: 'Provision',
    prefix: 'provision',
    runs: {
      0x05:
        'Provision Policies Policy PolicyType PolicyKey Data Status RemoteWipe EASProvisionDoc DevicePasswordEnabled ' +
        'AlphanumericDevicePasswordRequired RequireStorageCardEncryption PasswordRecoveryEnabled',
      0x13:
        'AttachmentsEnabled MinDevicePasswordLength MaxInactivityTimeDeviceLock MaxDevicePasswordFailedAttempts ' +
        'MaxAttachmentSize AllowSimpleDevicePassword DevicePasswordExpiration DevicePasswordHistory AllowStorageCard ' +
        'AllowCamera RequireDeviceEncryption AllowUnsignedApplications AllowUnsignedInstallationPackages ' +
        'MinDevicePasswordComplexCharacters AllowWiFi AllowTextMessaging AllowPOPIMAPEmail AllowBluetooth AllowIrDA ' +
        'RequireManualSyncWhenRoaming AllowDesktopSync MaxCalendarAgeFilter AllowHTMLEmail MaxEmailAgeFilter ' +
        'MaxEmailBodyTruncationSize MaxEmailHTMLBodyTruncationSize RequireSignedSMIMEMessages ' +
        'RequireEncryptedSMIMEMessages RequireSignedSMIMEAlgorithm RequireEncryptionSMIMEAlgorithm ' +
        'AllowSMIMEEncryptionAlgorithmNegotiation AllowSMIMESoftCerts AllowBrowser AllowConsumerEmail ' +
        'AllowRemoteDesktop AllowInternetSharing UnapprovedInROMApplicationList ApplicationName ' +
        'ApprovedApplicationList Hash AccountOnlyRemoteWipe',
    },
    legacy: { 0x12: 'DocumentBrowseEnabled' },
  },
  {
    page: 15,
    name: 'Search',
    prefix: 'search',
    runs: {
      0x05: 'Search',
      0x07: 'Store Name Query Options Range Status Response Result Properties Total EqualTo Value And Or FreeText',
      0x17: 'DeepTraversal LongId RebuildResults LessThan GreaterThan',
      0x1e: 'UserName Password ConversationId Picture MaxSize MaxPictures',
    },
    legacy: { 0x06: 'Searches', 0x16: 'SubstringOp', 0x1c: 'Schema Supported' },
  },
  {
    page: 16,
    name: 'GAL',
    prefix: 'gal',
    runs: {
      0x05: 'DisplayName Phone Office Title Company Alias FirstName LastName HomePhone MobilePhone EmailAddress Picture Status Data',
    },
  },
  {
    page: 17,
    name: 'AirSyncBase',
    prefix: 'airsyncbase',
    runs: {
      0x05: 'BodyPreference Type TruncationSize AllOrNone',
      0x0a:
        'Body Data EstimatedDataSize Truncated Attachments Attachment DisplayName FileReference Method ContentId ' +
        'ContentLocation IsInline NativeBodyType ContentType Preview BodyPartPreference BodyPart Status Add Delete ' +
        'ClientId Content Location Annotation Street City State Country PostalCode Latitude Longitude Accuracy Altitude ' +
        'AltitudeAccuracy LocationUri InstanceId',
    },
  },
  {
    page: 18,
    name: 'Settings',
    prefix: 'settings',
    runs: {
      0x05:
        'Settings Status Get Set Oof OofState StartTime EndTime OofMessage AppliesToInternal AppliesToExternalKnown ' +
        'AppliesToExternalUnknown Enabled ReplyMessage BodyType DevicePassword Password DeviceInformation Model IMEI ' +
        'FriendlyName OS OSLanguage PhoneNumber UserInformation EmailAddresses SmtpAddress UserAgent EnableOutboundSMS ' +
        'MobileOperator PrimarySmtpAddress Accounts Account AccountId AccountName UserDisplayName SendDisabled',
      0x2b: 'RightsManagementInformation',
    },
  },
  {
    page: 19,
    name: 'DocumentLibrary',
    prefix: 'documentlibrary',
    runs: { 0x05: 'LinkId DisplayName IsFolder CreationDate LastModifiedDate IsHidden ContentLength ContentType' },
  },
  {
    page: 20,
    name: 'ItemOperations',
    prefix: 'itemoperations',
    runs: {
      0x05:
        'ItemOperations Fetch Store Options Range Total Properties Data Status Response Version Schema Part ' +
        'EmptyFolderContents DeleteSubFolders UserName Password Move DstFldId ConversationId MoveAlways',
    },
  },
  {
    page: 21,
    name: 'ComposeMail',
    prefix: 'composemail',
    runs: {
      0x05: 'SendMail SmartForward SmartReply SaveInSentItems ReplaceMime',
      0x0b: 'Source FolderId ItemId LongId InstanceId Mime ClientId Status AccountId',
      0x15: 'Forwardees Forwardee Name Email',
    },
  },
  {
    page: 22,
    name: 'Email2',
    prefix: 'email2',
    runs: {
      0x05:
        'UmCallerID UmUserNotes UmAttDuration UmAttOrder ConversationId ConversationIndex LastVerbExecuted ' +
        'LastVerbExecutionTime ReceivedAsBcc Sender CalendarType IsLeapMonth AccountId FirstDayOfWeek MeetingMessageType',
      0x15: 'IsDraft Bcc Send',
    },
  },
  {
    page: 23,
    name: 'Notes',
    prefix: 'notes',
    runs: { 0x05: 'Subject MessageClass LastModifiedDate Categories Category' },
  },
  {
    page: 24,
    name: 'RightsManagement',
    prefix: 'rm',
    runs: {
      0x05:
        'RightsManagementSupport RightsManagementTemplates RightsManagementTemplate RightsManagementLicense EditAllowed ' +
        'ReplyAllowed ReplyAllAllowed ForwardAllowed ModifyRecipientsAllowed ExtractAllowed PrintAllowed ExportAllowed ' +
        'ProgrammaticAccessAllowed Owner ContentExpiryDate TemplateID TemplateName TemplateDescription ContentOwner ' +
        'RemoveRightsManagementProtection',
    },
  },
  {
    page: 25,
    name: 'Find',
    prefix: 'find',
    runs: {
      0x05: 'Find SearchId ExecuteSearch MailBoxSearchCriterion Query Status FreeText Options Range DeepTraversal',
      0x11: 'Response Result Properties Preview HasAttachments Total DisplayCc DisplayBcc GalSearchCriterion',
      0x20: 'MaxPictures MaxSize Picture',
    },
  },
] as const satisfies readonly CodePageTable[];
