"""The desk's sign-in form: it says why someone who proved who they are cannot sign in.

Django's own form answers every failure alike ("enter the correct username and password for a
staff account"), so a person an apply made, with the right password but not staff, cannot tell
what is wrong. This form keeps that answer for anyone who has not proven who they are, and tells
one who has, by giving the account's right password:

- "<username> is not staff: ..." (only staff sign in to the desk);
- "<username>'s account is inactive: ..." (deactivated, e.g. once no data file declares them).

What an anonymous visitor learns stays what Django tells them: nothing about which usernames exist.
The reason is given only with the right password, which only that person (or someone holding it)
has. An account with no password yet cannot prove anything, so it is never named; the page's
general note (see `admin/login.html`) lists that case with the others for everyone alike. The
extra password check costs what a sign-in costs: for a username that does not exist a password is
hashed too (as Django does), so the time taken tells no more than Django's own form.
"""
from __future__ import annotations

from typing import Any

from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError


class DeskSignInForm(AdminAuthenticationForm):
    error_messages = {
        **AdminAuthenticationForm.error_messages,
        "not_staff": "The password is right, but %(username)s is not staff: only staff sign in to the desk. An "
                     "administrator makes them staff (staff=True on their sanoma.person in the data files, then "
                     "apply; or Staff status in the admin).",
        "inactive": "The password is right, but %(username)s's account is inactive (an apply deactivates a person "
                    "no data file declares any more). An administrator declares them again, or makes the "
                    "account active in the admin.",
    }

    def clean(self) -> dict[str, Any]:
        try:
            return super().clean()
        except ValidationError as refused:
            if getattr(refused, "code", None) != "invalid_login":
                raise
            reason = self._proven_reason(self.cleaned_data.get("username"), self.cleaned_data.get("password"))
            if reason is None:
                raise
            raise ValidationError(self.error_messages[reason], code=reason,
                                  params={"username": self.cleaned_data.get("username")}) from None

    @staticmethod
    def _proven_reason(username: str | None, password: str | None) -> str | None:
        """Why an account whose right password was given cannot sign in; None when the password does
        not prove who is asking (wrong, none set, no such account)."""
        if not username or not password:
            return None
        model = get_user_model()
        user = model._default_manager.filter(**{model.USERNAME_FIELD: username}).first()
        if user is None:
            model().set_password(password)  # the same work as checking a real account's password
            return None
        if not user.check_password(password):
            return None
        if not user.is_active:
            return "inactive"
        if not user.is_staff:
            return "not_staff"
        return None
