"""nbgrader settings of every user of the class: the course and its private exchange."""

import class_settings

c = get_config()  # noqa: F821 - provided by nbgrader when it loads this file

c.CourseDirectory.course_id = class_settings.COURSE_ID
c.Exchange.root = class_settings.EXCHANGE
for action in [
    "release_assignment",
    "submit",
    "collect",
    "release_feedback",
    "fetch_assignment",
    "fetch_feedback",
    "list",
]:
    name = "".join(part.capitalize() for part in action.split("_"))
    setattr(c.ExchangeFactory, action, f"course_exchange.Exchange{name}")
