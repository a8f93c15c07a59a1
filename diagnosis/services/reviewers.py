"""The reviewers group: may look at everything diagnosis-related and record reviews, nothing else."""

from django.apps import apps
from django.contrib.auth.management import create_permissions
from django.contrib.auth.models import Group, Permission
from django.db import transaction
from django.db.models import Q

REVIEWERS_GROUP_NAME = "reviewers"
REVIEWED_APPS = ("diagnosis", "caselib", "feedback")
REVIEW_PERMISSION = ("diagnosis", "review_session")


@transaction.atomic
def reviewer_group_ensure() -> Group:
    """Create or repair the group so it holds exactly the view permissions plus the review one."""
    for app_label in REVIEWED_APPS:
        # Permissions normally appear after migrate; creating them here makes the call safe anywhere.
        create_permissions(apps.get_app_config(app_label), verbosity=0)
    app_label, codename = REVIEW_PERMISSION
    permissions = Permission.objects.filter(
        Q(content_type__app_label__in=REVIEWED_APPS, codename__startswith="view_")
        | Q(content_type__app_label=app_label, codename=codename)
    )
    group, _ = Group.objects.get_or_create(name=REVIEWERS_GROUP_NAME)
    group.permissions.set(permissions)
    return group
