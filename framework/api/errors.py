"""The one error type for bad input: it names the field path that is wrong."""


class ValidationError(ValueError):
    """Input that does not describe a valid object. `field` is a JSON path such as
    `spec.containers[1].resources.requests.cpu`."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
        self.detail = message

    def under(self, prefix: str) -> "ValidationError":
        """The same error with `prefix` put in front of its field path."""
        if not prefix:
            return self
        field = f"{prefix}.{self.field}" if self.field and not self.field.startswith("[") else f"{prefix}{self.field}"
        return ValidationError(field, self.detail)
