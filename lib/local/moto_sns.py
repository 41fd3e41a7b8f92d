"""SNS subscriptions that wait for their endpoint to confirm them, as AWS's do; moto's do not.

moto 5.2.1 confirms every subscription the moment it is made (PendingConfirmation false, a real
SubscriptionArn) and its ConfirmSubscription checks no token. AWS confirms only some protocols
by itself: an e-mail, e-mail-json, HTTP or HTTPS endpoint gets a token (the e-mail's "Confirm
subscription" link, the HTTP/S SubscriptionConfirmation message), and until the endpoint calls
ConfirmSubscription with it the subscription delivers nothing and ListSubscriptions(ByTopic)
shows its SubscriptionArn as "PendingConfirmation" (SNS API reference, Subscribe and
ConfirmSubscription: https://docs.aws.amazon.com/sns/latest/api/API_Subscribe.html,
https://docs.aws.amazon.com/sns/latest/api/API_ConfirmSubscription.html). The local platform
follows AWS:

- A new subscription of those protocols is pending, with a token; publishes skip it.
- Publishes skip HTTP/S subscriptions altogether: moto would POST inside the Publish call and
  fail it with the endpoint; the local platform POSTs alarm notifications itself and records
  each delivery (lib/local/alarm-delivery.ts).
- ListSubscriptions(ByTopic) show it as PendingConfirmation; GetSubscriptionAttributes says
  PendingConfirmation "true".
- ConfirmSubscription(TopicArn, Token) confirms the pending subscription of that topic holding
  the token and returns its ARN; an unknown token is InvalidParameter.
- No mail is sent and no SubscriptionConfirmation message is POSTed: the token is read where the
  mail or the POST would have carried it, GET /_tenang/sns/pending-confirmations on this server
  (JSON: [{TopicArn, Protocol, Endpoint, Token}]), which only the platform's confirm step reads.

Not emulated: Subscribe answers the ARN even for a pending subscription (AWS answers "pending
confirmation" unless ReturnSubscriptionArn is true); tokens do not expire (AWS: after 3 days);
the topic's SubscriptionsPending/SubscriptionsConfirmed counts.
"""

import json
import secrets

from moto.core.responses import ActionResult
from moto.sns import models as sns_models
from moto.sns import responses as sns_responses
from moto.sns.exceptions import SNSInvalidParameter, SNSNotFoundError

CONFIRMED_BY_ENDPOINT = {"email", "email-json", "http", "https"}
PENDING = "PendingConfirmation"
PENDING_PATH = "/_tenang/sns/pending-confirmations"


def _pending(subscription):
    return getattr(subscription, "tenang_token", None) is not None


def _install_models():
    original_subscribe = sns_models.SNSBackend.subscribe

    def subscribe(self, topic_arn, endpoint, protocol):
        existing = self._find_subscription(topic_arn, endpoint, protocol)
        subscription = original_subscribe(self, topic_arn, endpoint, protocol)
        if existing is None and protocol in CONFIRMED_BY_ENDPOINT:
            subscription.tenang_token = secrets.token_hex(32)
            subscription.attributes["PendingConfirmation"] = True
        return subscription

    sns_models.SNSBackend.subscribe = subscribe

    # The serializer reads SubscriptionArn before falling back to `arn`, which stays the key.
    sns_models.Subscription.SubscriptionArn = property(
        lambda self: PENDING if _pending(self) else self.arn
    )

    original_publish = sns_models.Subscription.publish

    def publish(self, *args, **kwargs):
        if _pending(self):
            return None
        # moto POSTs inside Publish and fails the Publish when the endpoint does; AWS delivers
        # after answering. The local platform delivers (and records) HTTP/S notifications itself.
        if self.protocol in ("http", "https"):
            return None
        return original_publish(self, *args, **kwargs)

    sns_models.Subscription.publish = publish


def _install_confirm():
    def confirm_subscription(self):
        topic_arn = self._get_param("TopicArn")
        token = self._get_param("Token")
        if topic_arn not in self.backend.topics:
            raise SNSNotFoundError("Topic does not exist")
        for subscription in self.backend.subscriptions.values():
            if subscription.topic.arn == topic_arn and getattr(subscription, "tenang_token", None) == token:
                subscription.tenang_token = None
                subscription.attributes["PendingConfirmation"] = False
                return ActionResult({"SubscriptionArn": subscription.arn})
        raise SNSInvalidParameter("Invalid token")

    sns_responses.SNSResponse.confirm_subscription = confirm_subscription


def pending_confirmations():
    """Every pending subscription of every account and region, with its token."""
    found = []
    for _account, regions in sns_models.sns_backends.items():
        for _region, backend in regions.items():
            for subscription in backend.subscriptions.values():
                if _pending(subscription):
                    found.append(
                        {
                            "TopicArn": subscription.topic.arn,
                            "Protocol": subscription.protocol,
                            "Endpoint": subscription.endpoint,
                            "Token": subscription.tenang_token,
                        }
                    )
    return found


def install(server_module):
    """Patches moto's SNS and serves PENDING_PATH from the dispatcher `server_module` uses."""
    _install_models()
    _install_confirm()
    base = server_module.DomainDispatcherApplication

    class WithPendingConfirmations(base):
        def __call__(self, environ, start_response):  # type: ignore[override]
            if environ.get("PATH_INFO") == PENDING_PATH and environ.get("REQUEST_METHOD") == "GET":
                body = json.dumps(pending_confirmations()).encode()
                start_response("200 OK", [("Content-Type", "application/json")])
                return [body]
            return super().__call__(environ, start_response)

    server_module.DomainDispatcherApplication = WithPendingConfirmations
