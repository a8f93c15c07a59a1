"""The reviewers group: may look at everything diagnosis-related, record reviews of sessions and
approve or reject candidate cases, nothing else."""

from django.apps import apps
from django.contrib.auth.management import create_permissions
from django.contrib.auth.models import Group, Permission
from django.db import transaction
from django.db.models import Q

REVIEWERS_GROUP_NAME = "reviewers"
REVIEWED_APPS = ("diagnosis", "caselib", "feedback")
REVIEW_PERMISSION = ("diagnosis", "review_session")
CASE_REVIEW_PERMISSION = ("caselib", "review_case")


@transaction.atomic
def reviewer_group_ensure() -> Group:
    """Create or repair the group so it holds exactly the view permissions plus the two review ones."""
    for app_label in REVIEWED_APPS:
        # Permissions normally appear after migrate; creating them here makes the call safe anywhere.
        create_permissions(apps.get_app_config(app_label), verbosity=0)
    reviews = Q()
    for app_label, codename in (REVIEW_PERMISSION, CASE_REVIEW_PERMISSION):
        reviews |= Q(content_type__app_label=app_label, codename=codename)
    permissions = Permission.objects.filter(
        Q(content_type__app_label__in=REVIEWED_APPS, codename__startswith="view_") | reviews
    )
    group, _ = Group.objects.get_or_create(name=REVIEWERS_GROUP_NAME)
    group.permissions.set(permissions)
    return group
