"""Contains all the data models used in inputs/outputs"""

from .ack_batch import AckBatch
from .ack_request import AckRequest
from .attempt_error import AttemptError
from .attempt_view import AttemptView
from .backlog_view import BacklogView
from .batch_item import BatchItem
from .batch_result import BatchResult
from .brand import Brand
from .breaker_fields import BreakerFields
from .bulk_filter import BulkFilter
from .bulk_retry_request import BulkRetryRequest
from .cancel_request import CancelRequest
from .cancelled import Cancelled
from .circuit_view import CircuitView
from .consumer_token import ConsumerToken
from .create_batch import CreateBatch
from .create_event import CreateEvent
from .create_event_batch import CreateEventBatch
from .create_event_headers_type_0 import CreateEventHeadersType0
from .create_notification import CreateNotification
from .create_notification_headers_type_0 import CreateNotificationHeadersType0
from .deleted import Deleted
from .delivery import Delivery
from .ended_batch import EndedBatch
from .ended_item import EndedItem
from .ended_view import EndedView
from .endpoint_fields import EndpointFields
from .endpoint_fields_filter_type_0 import EndpointFieldsFilterType0
from .endpoint_fields_headers_type_0 import EndpointFieldsHeadersType0
from .endpoint_fields_success_filter_type_0 import EndpointFieldsSuccessFilterType0
from .endpoint_view import EndpointView
from .endpoint_view_filter_type_0 import EndpointViewFilterType0
from .endpoint_view_headers import EndpointViewHeaders
from .endpoint_view_success_filter_type_0 import EndpointViewSuccessFilterType0
from .error_body import ErrorBody
from .error_detail import ErrorDetail
from .event_batch_item import EventBatchItem
from .event_batch_result import EventBatchResult
from .event_cancelled import EventCancelled
from .event_view import EventView
from .extend_request import ExtendRequest
from .failing_endpoint_view import FailingEndpointView
from .header_line import HeaderLine
from .health import Health
from .issue_link import IssueLink
from .last_attempt import LastAttempt
from .lease_view import LeaseView
from .list_notifications_order import ListNotificationsOrder
from .matched import Matched
from .nack_batch import NackBatch
from .nack_request import NackRequest
from .notification_view import NotificationView
from .notification_view_headers import NotificationViewHeaders
from .operation_kind import OperationKind
from .operation_status import OperationStatus
from .operation_view import OperationView
from .ordering import Ordering
from .ordering_on_failure import OrderingOnFailure
from .owner_revoked import OwnerRevoked
from .page_attempt_view import PageAttemptView
from .page_endpoint_view import PageEndpointView
from .page_event_view import PageEventView
from .page_notification_view import PageNotificationView
from .portal_link import PortalLink
from .portal_permission import PortalPermission
from .portal_view_type_0 import PortalViewType0
from .portal_view_type_1 import PortalViewType1
from .previous_public_key_view import PreviousPublicKeyView
from .previous_secret_view import PreviousSecretView
from .public_key_view import PublicKeyView
from .pull_request import PullRequest
from .pull_result import PullResult
from .pulled import Pulled
from .pulled_headers import PulledHeaders
from .rate_limit import RateLimit
from .recent_event_types import RecentEventTypes
from .recover_request import RecoverRequest
from .recover_running import RecoverRunning
from .revoked import Revoked
from .rotate_secret import RotateSecret
from .schedule_spec_type_0 import ScheduleSpecType0
from .secret_view import SecretView
from .send_test import SendTest
from .signing import Signing
from .stats_totals import StatsTotals
from .stats_view import StatsView
from .stats_window import StatsWindow
from .status import Status
from .status_counts import StatusCounts
from .waiting import Waiting
from .waiting_reason import WaitingReason
from .who_am_i import WhoAmI

__all__ = (
    "AckBatch",
    "AckRequest",
    "AttemptError",
    "AttemptView",
    "BacklogView",
    "BatchItem",
    "BatchResult",
    "Brand",
    "BreakerFields",
    "BulkFilter",
    "BulkRetryRequest",
    "CancelRequest",
    "Cancelled",
    "CircuitView",
    "ConsumerToken",
    "CreateBatch",
    "CreateEvent",
    "CreateEventBatch",
    "CreateEventHeadersType0",
    "CreateNotification",
    "CreateNotificationHeadersType0",
    "Deleted",
    "Delivery",
    "EndedBatch",
    "EndedItem",
    "EndedView",
    "EndpointFields",
    "EndpointFieldsFilterType0",
    "EndpointFieldsHeadersType0",
    "EndpointFieldsSuccessFilterType0",
    "EndpointView",
    "EndpointViewFilterType0",
    "EndpointViewHeaders",
    "EndpointViewSuccessFilterType0",
    "ErrorBody",
    "ErrorDetail",
    "EventBatchItem",
    "EventBatchResult",
    "EventCancelled",
    "EventView",
    "ExtendRequest",
    "FailingEndpointView",
    "HeaderLine",
    "Health",
    "IssueLink",
    "LastAttempt",
    "LeaseView",
    "ListNotificationsOrder",
    "Matched",
    "NackBatch",
    "NackRequest",
    "NotificationView",
    "NotificationViewHeaders",
    "OperationKind",
    "OperationStatus",
    "OperationView",
    "Ordering",
    "OrderingOnFailure",
    "OwnerRevoked",
    "PageAttemptView",
    "PageEndpointView",
    "PageEventView",
    "PageNotificationView",
    "PortalLink",
    "PortalPermission",
    "PortalViewType0",
    "PortalViewType1",
    "PreviousPublicKeyView",
    "PreviousSecretView",
    "PublicKeyView",
    "PullRequest",
    "PullResult",
    "Pulled",
    "PulledHeaders",
    "RateLimit",
    "RecentEventTypes",
    "RecoverRequest",
    "RecoverRunning",
    "Revoked",
    "RotateSecret",
    "ScheduleSpecType0",
    "SecretView",
    "SendTest",
    "Signing",
    "StatsTotals",
    "StatsView",
    "StatsWindow",
    "Status",
    "StatusCounts",
    "Waiting",
    "WaitingReason",
    "WhoAmI",
)
