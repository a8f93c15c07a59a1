"""The demo accounts `manage.py quickstart` prints: an engineer and a staff reviewer."""

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractUser
from django.db import transaction

from diagnosis.services.reviewers import reviewer_group_ensure


def _account_with_password(*, username: str, password: str) -> AbstractUser:
    user, _ = get_user_model().objects.get_or_create(username=username)
    # The printed credentials must work, so an existing account gets the configured password.
    if not user.check_password(password):
        user.set_password(password)
    user.is_active = True
    return user


@transaction.atomic
def engineer_account_ensure(*, username: str, password: str) -> AbstractUser:
    user = _account_with_password(username=username, password=password)
    user.save()
    return user


@transaction.atomic
def reviewer_account_ensure(*, username: str, password: str) -> AbstractUser:
    user = _account_with_password(username=username, password=password)
    user.is_staff = True
    user.save()
    user.groups.add(reviewer_group_ensure())
    return user
