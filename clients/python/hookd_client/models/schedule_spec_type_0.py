from enum import StrEnum


class ScheduleSpecType0(StrEnum):
    ALIPAY = "alipay"
    EXPONENTIAL = "exponential"
    WECHAT = "wechat"

    def __str__(self) -> str:
        return str(self.value)
