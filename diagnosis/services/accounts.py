"""The demo accounts `manage.py quickstart` prints: an engineer and a staff reviewer.

No password is built in: a configured one is set (also on an existing account, which resets it)
once it passes the project's password validators, otherwise a new account gets a random one, and an
existing account keeps the one it has.
"""

import secrets
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractUser
from django.contrib.auth.password_validation import validate_password
from django.db import transaction

from diagnosis.services.reviewers import reviewer_group_ensure


@dataclass(frozen=True)
class DemoAccount:
    user: AbstractUser
    # The password to print; None when an existing account kept its own (nobody knows it here).
    password: str | None
    generated: bool = False


def _account_with_password(*, username: str, password: str | None) -> DemoAccount:
    user, created = get_user_model().objects.get_or_create(username=username)
    user.is_active = True
    if password is None and not created:
        return DemoAccount(user=user, password=None)
    generated = password is None
    if generated:
        password = secrets.token_urlsafe(12)
    else:
        # Raises ValidationError (too short, too common, like the username…); the transaction undoes the user.
        validate_password(password, user)
    if not user.check_password(password):
        user.set_password(password)
    return DemoAccount(user=user, password=password, generated=generated)


@transaction.atomic
def engineer_account_ensure(*, username: str, password: str | None) -> DemoAccount:
    account = _account_with_password(username=username, password=password)
    account.user.save()
    return account


@transaction.atomic
def reviewer_account_ensure(*, username: str, password: str | None) -> DemoAccount:
    account = _account_with_password(username=username, password=password)
    account.user.is_staff = True
    account.user.save()
    account.user.groups.add(reviewer_group_ensure())
    return account
